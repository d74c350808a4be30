"""Stockade: a Fencing-Token on every S3 request that boto3 or the AWS CLI signs.

The token goes in as a header *before* the request is signed (botocore's ``before-sign`` event), so the
signature covers it, as a Stockade s3 policy with ``auth: sigv4`` requires. By default the token is read from
``$FENCING_TOKEN`` at each request, which is what ``lease run`` sets for the command it runs; a request made while
``$FENCING_TOKEN`` is unset or empty goes out without one (reads need none; a fenced write is then refused).
``$FENCING_TOKEN_HEADER`` names another header when the policy's ``fence.header`` is not ``Fencing-Token``.

boto3::

    import boto3, stockade_fencing
    s3 = boto3.client("s3", endpoint_url="http://stockade:8080")
    stockade_fencing.register(s3)             # the token from $FENCING_TOKEN, read at each request
    stockade_fencing.register(s3, token=7)    # or a fixed token, or a callable returning one

AWS CLI, in the file ``aws`` reads (``~/.aws/config`` or ``$AWS_CONFIG_FILE``); v1 imports the plugin from
Python's path (``export PYTHONPATH=/path/to/stockade/client-sdk/python``) and crashes on a
``cli_legacy_plugin_path`` line, which v2 needs (docs/s3.md, *The AWS CLI and boto3*). v1::

    [plugins]
    stockade_fencing = stockade_fencing

v2::

    [plugins]
    cli_legacy_plugin_path = /path/to/stockade/client-sdk/python
    stockade_fencing = stockade_fencing

then ``FENCING_TOKEN=7 aws s3 sync ./out s3://bucket/out --delete`` fences every upload and every delete.
Depends on nothing but botocore, which boto3 and the AWS CLI bring.
"""
import os

__all__ = ["register", "register_session", "awscli_initialize"]

TOKEN_ENV = "FENCING_TOKEN"
HEADER_ENV = "FENCING_TOKEN_HEADER"
DEFAULT_HEADER = "Fencing-Token"
# before-sign.s3.<Operation>: every S3 operation, after the request is built and before it is signed
EVENT = "before-sign.s3"
UNIQUE_ID = "stockade-fencing-token"


def _hook(token=None):
    def add_fencing_token(request, **kwargs):
        value = token() if callable(token) else token
        if value is None:
            value = os.environ.get(TOKEN_ENV)
        if value is None or str(value).strip() == "":
            return
        name = os.environ.get(HEADER_ENV) or DEFAULT_HEADER
        # a retried request passes here again: one header, never two
        if name in request.headers:
            del request.headers[name]
        request.headers[name] = str(value).strip()

    return add_fencing_token


def register(client, token=None):
    """Adds the token to every S3 request of a boto3/botocore client; returns the client."""
    client.meta.events.register(EVENT, _hook(token), unique_id=UNIQUE_ID)
    return client


def register_session(session, token=None):
    """Adds the token to every S3 request of the clients a boto3 or botocore session creates after this call."""
    events = session.events if hasattr(session, "events") else session.get_component("event_emitter")
    events.register(EVENT, _hook(token), unique_id=UNIQUE_ID)
    return session


def awscli_initialize(cli):
    """The AWS CLI's plugin entry point (``[plugins]`` in its config): the token from ``$FENCING_TOKEN``."""
    cli.register(EVENT, _hook(), unique_id=UNIQUE_ID)
