"""The web console at /ui (issue 19): server-rendered pages that act only through the
app's own /v1 API with the signed-in token, so the API's roles are the console's."""
