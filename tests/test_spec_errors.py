"""Bad specs: every problem is a SpecError naming the key at fault and its line:column.

Spec texts are written flush left with `text()`, so line 1 of the spec is the first line
inside the triple quotes, and columns are as they read.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from placed.spec import SpecError, load_spec, load_spec_text, load_specs_text
from placed.spec.errors import Problem


def text(spec: str) -> str:
    return textwrap.dedent(spec).lstrip("\n")


def problems(spec: str) -> list[Problem]:
    with pytest.raises(SpecError) as caught:
        load_specs_text(text(spec), source="spec.yaml")
    assert caught.value.source == "spec.yaml"
    return caught.value.problems


def only(spec: str) -> Problem:
    found = problems(spec)
    assert len(found) == 1, found
    return found[0]


def at(problem: Problem) -> tuple[int, int]:
    assert problem.position is not None, problem
    return problem.position.line, problem.position.column


# -- YAML and JSON syntax -------------------------------------------------------------


def test_unclosed_bracket_points_at_the_error_and_where_the_list_began() -> None:
    problem = only(
        """
        inventory:
          - id: a
            tags: [rack10, network1
        workloads: []
        """
    )
    assert problem.message.startswith("not valid YAML: expected ',' or ']'")
    assert "flow sequence at line 3, column 11" in problem.message
    assert at(problem) == (4, 10)


def test_bracket_closed_by_a_brace() -> None:
    problem = only(
        """
        inventory:
          - {id: a, tags: [rack10}
        """
    )
    assert "expected ',' or ']', but got '}'" in problem.message
    assert "flow sequence at line 2, column 19" in problem.message
    assert at(problem) == (2, 26)


def test_bad_indentation() -> None:
    problem = only(
        """
        inventory:
          - id: a
           kind: host
        """
    )
    assert problem.message.startswith("not valid YAML: expected <block end>")
    assert "at line 2, column 3" in problem.message
    assert at(problem) == (3, 4)
    assert problem.key == ""


def test_tab_indentation_in_yaml() -> None:
    problem = only("inventory:\n\t- id: a\n")
    assert "'\\t'" in problem.message
    assert at(problem) == (2, 1)


def test_malformed_json_missing_comma() -> None:
    problem = only(
        """
        {
          "inventory": [
            {"id": "a" "kind": "rack"}
          ]
        }
        """
    )
    assert problem.message.startswith("not valid YAML: expected ',' or '}'")
    assert at(problem) == (3, 16)


def test_malformed_json_unclosed_object() -> None:
    problem = only(
        """
        {
          "inventory": [
            {"id": "a"
          ]
        }
        """
    )
    assert "expected ',' or '}', but got ']'" in problem.message
    assert "flow mapping at line 3, column 5" in problem.message
    assert at(problem) == (4, 3)


def test_json_spec_errors_have_positions_too() -> None:
    problem = only(
        """
        {
          "inventory": [
            {"id": "a", "status": "sideways"}
          ]
        }
        """
    )
    assert problem.key == "inventory[0].status"
    assert at(problem) == (3, 27)


def test_json_indented_with_tabs_is_a_valid_spec() -> None:
    spec = load_spec_text('{\n\t"inventory": [\n\t\t{"id": "a"}\n\t]\n}\n', source="spec.json")
    assert [t.id for t in spec.inventory.targets] == ["a"]


def test_json_indented_with_tabs_keeps_its_columns() -> None:
    problem = only('{\n\t"inventory": [\n\t\t{"id": "a", "kind": 3}\n\t]\n}\n')
    assert problem.key == "inventory[0].kind"
    assert at(problem) == (3, 23)


def test_undefined_alias() -> None:
    problem = only(
        """
        inventory:
          - id: a
            tags: *common
        """
    )
    assert problem.message == "not valid YAML: found undefined alias 'common'"
    assert at(problem) == (3, 11)


def test_alias_to_a_node_that_contains_it() -> None:
    problem = only(
        """
        inventory:
          - &loop
            id: a
            children: [*loop]
        """
    )
    assert "alias refers to a node that contains it" in problem.message
    assert problem.key == "inventory[0].children[0]"
    assert at(problem) == (4, 15)


def test_merge_keys_are_refused_clearly() -> None:
    problem = only(
        """
        inventory:
          - <<: {kind: rack}
            id: a
        """
    )
    assert problem.message == "YAML merge keys (<<) are not supported; write the keys out"
    assert problem.key == "inventory[0]"
    assert at(problem) == (2, 5)


def test_unknown_yaml_tag_on_a_value() -> None:
    problem = only(
        """
        inventory:
          - id: !host a
        """
    )
    assert problem.message == "could not determine a constructor for the tag '!host'"
    assert at(problem) == (2, 9)


def test_unknown_yaml_tag_on_a_key() -> None:
    problem = only(
        """
        inventory:
          - !host id: a
        """
    )
    assert problem.message == "could not determine a constructor for the tag '!host'"
    assert at(problem) == (2, 5)


# -- the shape of a document ----------------------------------------------------------


@pytest.mark.parametrize("spec", ["", "\n\n", "# only a comment\n", "---\n", "---\n---\n"])
def test_empty_spec(spec: str) -> None:
    problem = only(spec)
    assert problem.message == "the spec is empty; it needs at least an inventory"
    assert at(problem) == (1, 1)


def test_a_list_instead_of_a_mapping() -> None:
    problem = only(
        """
        # a comment first
        - id: a
        - id: b
        """
    )
    assert problem.message == "the spec must be a mapping with an inventory, got a list"
    assert at(problem) == (2, 1)


def test_a_scalar_instead_of_a_mapping() -> None:
    problem = only("conductor1\n")
    assert problem.message == (
        "the spec must be a mapping with an inventory, got a string 'conductor1'"
    )
    assert at(problem) == (1, 1)


def test_null_document() -> None:
    problem = only("~\n")
    assert problem.message.endswith("got nothing (null)")
    assert at(problem) == (1, 1)


def test_trailing_document_separator_is_not_a_document() -> None:
    specs = load_specs_text("name: a\ninventory:\n  - id: x\n---\n", source="spec.yaml")
    assert [s.name for s in specs] == ["a"]


def test_non_string_keys_must_be_quoted() -> None:
    problem = only(
        """
        inventory:
          - id: a
            capacity: {8: cpu}
        """
    )
    assert problem.message == "a key must be text, but '8' reads as 8; quote it"
    assert problem.key == "inventory[0].capacity"
    assert at(problem) == (3, 16)


def test_yes_as_a_key_reads_as_a_boolean() -> None:
    problem = only(
        """
        inventory:
          - id: a
            yes: 1
        """
    )
    assert problem.message == "a key must be text, but 'yes' reads as True; quote it"
    assert at(problem) == (3, 5)


def test_a_list_as_a_key() -> None:
    problem = only(
        """
        inventory:
          - id: a
            [x]: 1
        """
    )
    assert problem.message == "a mapping key must be a plain value"
    assert at(problem) == (3, 5)


# -- files -------------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nosuch.yaml"
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.source == str(path)
    [problem] = caught.value.problems
    assert problem.message == "no such file"
    assert problem.position is None
    assert str(caught.value) == f"{path}: no such file"


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as caught:
        load_spec(tmp_path)
    [problem] = caught.value.problems
    assert problem.message == "is a directory, not a spec file"


def test_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_bytes(b"inventory:\n  - id: \xff\n")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    [problem] = caught.value.problems
    assert problem.message.startswith("cannot read: 'utf-8' codec can't decode byte 0xff")


def test_errors_from_a_file_name_it(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("inventory:\n  - id: a\n    status: sideways\n")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert str(caught.value) == (
        f"{path}:3:13: inventory[0].status: got 'sideways'; expected one of 'up' or 'down'"
    )


def test_load_spec_refuses_several_documents(tmp_path: Path) -> None:
    path = tmp_path / "two.yaml"
    path.write_text("name: a\ninventory: [{id: x}]\n---\nname: b\ninventory: [{id: x}]\n")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.problems[0].message == "holds 2 documents; expected one"


# -- wrong types: nothing is coerced ------------------------------------------------------


def test_units_as_a_string_is_not_coerced() -> None:
    problem = only(
        """
        inventory:
          - id: a
        workloads:
          - name: web
            units: "3"
        """
    )
    assert problem.message == "expected an integer, got a string '3'"
    assert problem.key == "workloads[0].units"
    assert at(problem) == (5, 12)


@pytest.mark.parametrize("units", ["0", "-2"])
def test_units_below_one(units: str) -> None:
    problem = only(
        f"""
        inventory:
          - id: a
        workloads:
          - name: web
            units: {units}
        """
    )
    assert problem.message == f"must be at least 1, got {units}"
    assert problem.key == "workloads[0].units"
    assert at(problem) == (5, 12)


@pytest.mark.parametrize(
    ("units", "message"),
    [
        ("2.5", "expected an integer, got a number 2.5"),
        ("true", "expected an integer, got a boolean True"),
        ("", "expected an integer, got nothing (null)"),
    ],
)
def test_units_of_other_types(units: str, message: str) -> None:
    problem = only(f"inventory: [{{id: a}}]\nworkloads:\n  - name: web\n    units: {units}\n")
    assert problem.message == message
    assert problem.key == "workloads[0].units"
    # A missing value stands where its key ends.
    assert at(problem) == ((4, 11) if units == "" else (4, 12))


def test_capacity_as_a_string_is_not_coerced() -> None:
    problem = only(
        """
        inventory:
          - id: host1
            capacity: {cpu: "8", memory: 32}
        """
    )
    assert problem.message == "expected a number, got a string '8'"
    assert problem.key == "inventory[0].capacity.cpu"
    assert at(problem) == (3, 21)


def test_capacity_as_a_list() -> None:
    problem = only(
        """
        inventory:
          - id: host1
            capacity: [cpu, 8]
        """
    )
    assert problem.message == "expected a mapping, got a list"
    assert problem.key == "inventory[0].capacity"
    assert at(problem) == (3, 15)


def test_status_sideways() -> None:
    problem = only(
        """
        inventory:
          - id: host1
            status: sideways
        """
    )
    assert problem.message == "got 'sideways'; expected one of 'up' or 'down'"
    assert problem.key == "inventory[0].status"
    assert at(problem) == (3, 13)


def test_mode_mapped() -> None:
    problem = only(
        """
        inventory:
          - id: c1
        workloads:
          - name: node1
            mode: mapped
        """
    )
    assert problem.message == "got 'mapped'; expected one of 'allocation', 'mapping' or 'every'"
    assert problem.key == "workloads[0].mode"
    assert at(problem) == (5, 11)


def test_settings_default_mode_mapped() -> None:
    problem = only(
        """
        settings:
          default_mode: mapped
        inventory:
          - id: c1
        """
    )
    assert problem.key == "settings.default_mode"
    assert problem.message.startswith("got 'mapped'; expected one of")
    assert at(problem) == (2, 17)


def test_unsupported_version() -> None:
    problem = only("version: 2\ninventory: [{id: a}]\n")
    assert problem.message == "got 2; expected one of 1"
    assert problem.key == "version"
    assert at(problem) == (1, 10)


def test_id_as_a_number() -> None:
    problem = only(
        """
        inventory:
          - id: 17
        """
    )
    assert problem.message == "expected a string, got an integer 17"
    assert problem.key == "inventory[0].id"
    assert at(problem) == (2, 9)


def test_id_with_a_space() -> None:
    problem = only(
        """
        inventory:
          - id: host 1
        """
    )
    assert problem.message == "'host 1' may not contain spaces or slashes"
    assert at(problem) == (2, 9)


def test_missing_id_points_at_the_location() -> None:
    problem = only(
        """
        inventory:
          - id: a
          - kind: host
            tags: [x]
        """
    )
    assert problem.message == "missing required key 'id'"
    assert problem.key == "inventory[1]"
    assert at(problem) == (3, 5)


def test_inventory_as_a_mapping() -> None:
    problem = only(
        """
        inventory:
          host1: {kind: host}
        """
    )
    assert problem.message == "expected a list, got a mapping"
    assert problem.key == "inventory"
    assert at(problem) == (2, 3)


def test_property_value_that_fits_no_kind_is_one_problem() -> None:
    problem = only(
        """
        inventory:
          - id: a
            properties:
              arch: x86
              disk: {size: 100}
        """
    )
    assert problem.message == (
        "expected a string, a number, a boolean or a list of strings, got a mapping"
    )
    assert problem.key == "inventory[0].properties.disk"
    assert at(problem) == (5, 13)


def test_property_list_item_that_is_not_a_string() -> None:
    problem = only(
        """
        inventory:
          - id: a
            properties:
              zones: [east, 3]
        """
    )
    assert problem.message == "expected a string, got an integer 3"
    assert problem.key == "inventory[0].properties.zones[1]"
    assert at(problem) == (4, 21)


def test_every_type_problem_is_reported_at_once() -> None:
    found = problems(
        """
        inventory:
          - id: a
            status: sideways
        workloads:
          - name: web
            units: "3"
        """
    )
    assert [(p.key, at(p)) for p in found] == [
        ("inventory[0].status", (3, 13)),
        ("workloads[0].units", (6, 12)),
    ]


# -- unknown keys --------------------------------------------------------------------------


def test_unknown_top_level_key() -> None:
    problem = only(
        """
        inventory:
          - id: a
        workload:
          - name: web
        """
    )
    assert problem.message == "unknown key 'workload'; did you mean 'workloads'?"
    assert problem.key == "workload"
    assert at(problem) == (3, 1)


def test_unknown_key_in_a_location() -> None:
    problem = only(
        """
        inventory:
          - id: conductor2
            hard-anti-affinity: [network3]
        """
    )
    assert problem.message == (
        "unknown key 'hard-anti-affinity'; did you mean 'hard_anti_affinity'?"
    )
    assert problem.key == "inventory[0].hard-anti-affinity"
    assert at(problem) == (3, 5)


def test_unknown_key_in_a_nested_child() -> None:
    problem = only(
        """
        inventory:
          - id: dc1
            kind: zone
            children:
              - id: rack1
                kind: rack
                children:
                  - id: conductor2
                    anti-tags: [customer1]
        """
    )
    assert problem.message == "unknown key 'anti-tags'; did you mean 'anti_tags'?"
    assert problem.key == "inventory[0].children[0].children[0].anti-tags"
    assert at(problem) == (9, 13)


def test_unknown_key_in_a_workload() -> None:
    problem = only(
        """
        inventory:
          - id: a
        workloads:
          - name: node1
            tag: [rack10]
        """
    )
    assert problem.message == "unknown key 'tag'; did you mean 'tags'?"
    assert problem.key == "workloads[0].tag"
    assert at(problem) == (5, 5)


def test_unknown_key_in_settings() -> None:
    problem = only(
        """
        settings:
          default-mode: mapping
        inventory:
          - id: a
        """
    )
    assert problem.message == "unknown key 'default-mode'; did you mean 'default_mode'?"
    assert problem.key == "settings.default-mode"
    assert at(problem) == (2, 3)


def test_unknown_key_with_nothing_close_lists_the_allowed_keys() -> None:
    problem = only(
        """
        inventory:
          - id: a
        workloads:
          - name: web
            flavour: small
        """
    )
    assert problem.message == (
        "unknown key 'flavour'; allowed keys: cluster_namespace, constraints, max_load, mode, "
        "name, pattern, properties, resources, service, services, tags, units"
    )
    assert at(problem) == (5, 5)


def test_unknown_key_points_at_the_key_not_its_value() -> None:
    problem = only(
        """
        inventory:
          - id: a
            colour:
              - red
        """
    )
    assert problem.key == "inventory[0].colour"
    assert at(problem) == (3, 5)


# -- duplicates ---------------------------------------------------------------------------


def test_duplicate_sibling_ids() -> None:
    problem = only(
        """
        inventory:
          - id: c1
          - id: c1
        """
    )
    assert problem.message == (
        "duplicate target id 'c1' (first at line 2); ids must be unique across the inventory"
    )
    assert problem.key == "inventory[1].id"
    assert at(problem) == (3, 9)


def test_duplicate_ids_across_subtrees_name_the_first() -> None:
    problem = only(
        """
        inventory:
          - id: zone1
            children:
              - id: rack1
                children:
                  - id: host1
          - id: zone2
            children:
              - id: host1
        """
    )
    assert problem.message.startswith("duplicate target id 'host1' (first at line 6)")
    assert problem.key == "inventory[1].children[0].id"
    assert at(problem) == (9, 13)


def test_a_location_and_a_target_may_not_share_an_id() -> None:
    problem = only(
        """
        inventory:
          - id: rack1
            children:
              - id: rack1
        """
    )
    assert problem.message.startswith("duplicate target id 'rack1' (first at line 2)")
    assert at(problem) == (4, 13)


def test_duplicate_workload_names() -> None:
    problem = only(
        """
        inventory:
          - id: a
        workloads:
          - name: web
            units: 2
          - name: db
          - name: web
        """
    )
    assert problem.message == "duplicate workload name 'web' (first is workloads[0])"
    assert problem.key == "workloads[2].name"
    assert at(problem) == (7, 11)


def test_duplicate_yaml_key_in_one_mapping() -> None:
    problem = only(
        """
        inventory:
          - id: a
            tags: [x]
            kind: rack
            tags: [y]
        """
    )
    assert problem.message == "duplicate key 'tags' (first at line 3)"
    assert problem.key == "inventory[0].tags"
    assert at(problem) == (5, 5)


def test_duplicate_top_level_key() -> None:
    problem = only(
        """
        inventory:
          - id: a
        inventory:
          - id: b
        """
    )
    assert problem.message == "duplicate key 'inventory' (first at line 1)"
    assert at(problem) == (3, 1)


def test_duplicate_json_key() -> None:
    problem = only('{"inventory": [{"id": "a", "id": "b"}]}\n')
    assert problem.message == "duplicate key 'id' (first at line 1)"
    assert at(problem) == (1, 28)


def test_same_key_in_different_mappings_is_fine() -> None:
    spec = load_spec_text("inventory:\n  - {id: a, kind: rack}\n  - {id: b, kind: rack}\n")
    assert {t.id for t in spec.inventory.targets} == {"a", "b"}


# -- tags ---------------------------------------------------------------------------------


def test_tags_written_as_a_string() -> None:
    problem = only(
        """
        inventory:
          - id: conductor1
            tags: rack10, network1
        """
    )
    assert problem.message == (
        "expected a list, got a string 'rack10, network1' "
        "(write tags as a YAML list, e.g. [rack10, network1])"
    )
    assert problem.key == "inventory[0].tags"
    assert at(problem) == (3, 11)


def test_rule_list_written_as_a_string() -> None:
    problem = only(
        """
        inventory:
          - id: conductor1
            hard_affinity: datacenter1
        """
    )
    assert problem.message.startswith("expected a list, got a string 'datacenter1'")
    assert problem.message.endswith("(write tags as a YAML list, e.g. [rack10, network1])")
    assert at(problem) == (3, 20)


def test_workload_tags_written_as_a_string() -> None:
    problem = only(
        """
        inventory:
          - id: conductor1
        workloads:
          - name: node1
            tags: rack10
        """
    )
    assert problem.key == "workloads[0].tags"
    assert "write tags as a YAML list" in problem.message
    assert at(problem) == (5, 11)


def test_tag_with_a_comma_inside_a_list() -> None:
    problem = only(
        """
        inventory:
          - id: conductor1
            tags: ["rack10, network1"]
        """
    )
    assert problem.message.startswith("tag 'rack10, network1' contains a comma or a space")
    assert "[rack10, network1]" in problem.message
    assert problem.key == "inventory[0].tags[0]"
    assert at(problem) == (3, 12)


def test_tag_with_a_space_in_a_workload() -> None:
    problem = only(
        """
        inventory:
          - id: conductor1
        workloads:
          - name: node1
            tags:
              - rack10
              - network 1
        """
    )
    assert problem.message.startswith("tag 'network 1' contains a comma or a space")
    assert problem.key == "workloads[0].tags[1]"
    assert at(problem) == (7, 9)


def test_empty_tag() -> None:
    problem = only(
        """
        inventory:
          - id: a
            anti_tags: [""]
        """
    )
    assert problem.message == "may not be empty"
    assert problem.key == "inventory[0].anti_tags[0]"
    assert at(problem) == (3, 17)


# -- what the model forbids ------------------------------------------------------------


def test_capacity_on_a_location_with_children() -> None:
    problem = only(
        """
        inventory:
          - id: rack1
            kind: rack
            capacity: {cpu: 64}
            children:
              - id: host1
              - id: host2
        """
    )
    assert problem.message == (
        "capacity belongs on targets (locations without children); 'rack1' has 2 children"
    )
    assert problem.key == "inventory[0].capacity"
    assert at(problem) == (4, 15)


def test_resources_on_a_mapping_workload() -> None:
    problem = only(
        """
        inventory:
          - id: c1
        workloads:
          - name: node1
            mode: mapping
            resources: {cpu: 1}
        """
    )
    assert problem.message.startswith("a mapping workload consumes no capacity")
    assert problem.message.endswith("use mode: allocation")
    assert problem.key == "workloads[0].resources"
    assert at(problem) == (6, 16)


def test_resources_on_a_workload_mapped_by_default() -> None:
    problem = only(
        """
        settings: {default_mode: mapping}
        inventory:
          - id: c1
        workloads:
          - name: node1
            resources:
              cpu: 1
        """
    )
    assert problem.message.startswith("a mapping workload consumes no capacity")
    assert at(problem) == (7, 7)


def test_negative_resources() -> None:
    problem = only(
        """
        inventory:
          - id: h1
        workloads:
          - name: web
            resources: {cpu: 1, memory: -2}
        """
    )
    assert problem.message == "resource amounts may not be negative: memory"
    assert problem.key == "workloads[0].resources"
    assert at(problem) == (5, 16)


def test_negative_capacity() -> None:
    problem = only(
        """
        inventory:
          - id: h1
            capacity: {cpu: -8}
        """
    )
    assert problem.message == "capacity amounts may not be negative: cpu"
    assert problem.key == "inventory[0].capacity"
    assert at(problem) == (3, 15)


def test_infinite_capacity_is_an_error_not_a_crash() -> None:
    # .inf once reached the openhorizon.cpu built-in and raised a traceback there.
    problem = only(
        """
        inventory:
          - id: h1
            capacity: {cpu: .inf, memory: -.inf}
        """
    )
    assert problem.message == "capacity amounts must be finite numbers: cpu (inf), memory (-inf)"
    assert at(problem) == (3, 15)


def test_nan_resources_are_an_error() -> None:
    problem = only(
        """
        inventory:
          - id: h1
        workloads:
          - name: web
            resources: {cpu: .nan}
        """
    )
    assert problem.message == "resource amounts must be finite numbers: cpu (nan)"
    assert at(problem) == (5, 16)


def test_model_problems_are_all_reported() -> None:
    found = problems(
        """
        inventory:
          - id: a
          - id: a
        workloads:
          - name: w
          - name: w
            resources: {cpu: -1}
        """
    )
    assert [(p.key, at(p)) for p in found] == [
        ("inventory[1].id", (3, 9)),
        ("workloads[1].name", (6, 11)),
        ("workloads[1].resources", (7, 16)),
    ]


# -- several documents ----------------------------------------------------------------------


def test_two_documents_with_the_same_name() -> None:
    problem = only(
        """
        name: ironic
        inventory: [{id: c1}]
        ---
        name: ironic
        inventory: [{id: c2}]
        """
    )
    assert problem.message == (
        "duplicate document name 'ironic' (first at line 1); "
        "the documents in one file need distinct names"
    )
    assert problem.key == "name"
    assert at(problem) == (4, 7)


def test_two_unnamed_documents_are_both_named_after_the_file() -> None:
    problem = only(
        """
        inventory: [{id: c1}]
        ---
        # the second scenario
        inventory: [{id: c2}]
        """
    )
    assert problem.message.startswith(
        "this document has no name, so it is named 'spec' after the file, "
        "like the document at line 1"
    )
    assert at(problem) == (4, 1)


def test_an_error_in_the_second_document_counts_lines_from_the_top_of_the_file() -> None:
    problem = only(
        """
        name: first
        inventory:
          - id: c1
        ---
        name: second
        inventory:
          - id: c1
            status: sideways
        """
    )
    assert problem.key == "inventory[0].status"
    assert at(problem) == (8, 13)


def test_unknown_key_in_the_third_document() -> None:
    problem = only(
        """
        name: a
        inventory: [{id: x}]
        ---
        name: b
        inventory: [{id: x}]
        ---
        name: c
        inventory: [{id: x, tag: [t]}]
        """
    )
    assert problem.message == "unknown key 'tag'; did you mean 'tags'?"
    assert at(problem) == (8, 21)


def test_second_document_that_is_a_list() -> None:
    problem = only(
        """
        name: a
        inventory: [{id: x}]
        ---
        - id: y
        """
    )
    assert problem.message == "the spec must be a mapping with an inventory, got a list"
    assert at(problem) == (4, 1)


def test_documents_with_distinct_names_load() -> None:
    specs = load_specs_text(
        text(
            """
            name: a
            inventory: [{id: x}]
            ---
            name: b
            inventory: [{id: x}]
            """
        ),
        source="spec.yaml",
    )
    assert [s.name for s in specs] == ["a", "b"]


# -- how problems read ------------------------------------------------------------------------


def test_rendered_as_file_line_column_key_message() -> None:
    with pytest.raises(SpecError) as caught:
        load_spec_text("inventory: [{id: a}]\nworkloads:\n  - {name: w, units: '3'}\n", "s.yaml")
    assert str(caught.value) == (
        "s.yaml:3:22: workloads[0].units: expected an integer, got a string '3'"
    )


def test_render_shows_at_most_ten_problems() -> None:
    spec = "inventory:\n" + "".join(f"  - {{id: h{i}, status: off}}\n" for i in range(12))
    with pytest.raises(SpecError) as caught:
        load_spec_text(spec, "s.yaml")
    assert len(caught.value.problems) == 12
    lines = str(caught.value).splitlines()
    assert len(lines) == 11
    assert lines[0] == "s.yaml:2:22: inventory[0].status: got False; expected one of 'up' or 'down'"
    assert lines[-1] == "... and 2 more problems"
