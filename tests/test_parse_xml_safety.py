"""XML reports never expand entities, load a DTD or touch the network, and keep libxml2's limits."""

from __future__ import annotations

import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from lxml import etree

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.parsers import parse, safe_xml

SECRET = "the-content-of-a-private-file"

COBERTURA_BODY = (
    '<coverage line-rate="1" lines-valid="1" lines-covered="1" branches-valid="0" branches-covered="0">'
    "<sources><source>{source}</source></sources><packages><package><classes>"
    '<class filename="a.c"><lines><line number="1" hits="1"/></lines></class>'
    "</classes></package></packages></coverage>"
)
JACOCO_BODY = (
    '<report name="{name}"><package name="p"><sourcefile name="A.java">'
    '<line nr="1" mi="0" ci="1" mb="0" cb="0"/></sourcefile></package>'
    '<counter type="LINE" missed="0" covered="1"/></report>'
)


class Server:
    """A local HTTP server that records every request it gets."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        requests = self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                requests.append(self.path)
                body = b'<!ENTITY x "fetched">'
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    server = Server()
    yield server
    server.close()


def refused(doc: bytes, fmt: str | None = None) -> CoverageError:
    with pytest.raises(CoverageError) as caught:
        parse(doc, format=fmt)
    assert caught.value.code is ErrorCode.MALFORMED_REPORT
    return caught.value


def billion_laughs(root: str) -> bytes:
    levels = ['<!ENTITY lol0 "lol">'] + [f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)]
    return f'<?xml version="1.0"?>\n<!DOCTYPE {root} [\n{"".join(levels)}\n]>\n'.encode()


# -- through the parsers --------------------------------------------------------
@pytest.mark.parametrize("fmt", ["cobertura", "jacoco", None])
def test_a_billion_laughs_report_is_refused_without_expanding_anything(fmt: str | None) -> None:
    doc = billion_laughs("coverage") + COBERTURA_BODY.format(source="&lol9;").encode()
    if fmt == "jacoco":
        doc = billion_laughs("report") + JACOCO_BODY.format(name="&lol9;").encode()
    error = refused(doc, fmt)  # None: detected from content first
    assert "declares entities" in error.message
    assert error.details["line"] == 3


def test_an_external_file_entity_is_refused_and_the_file_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    for target in ("file:///etc/passwd", secret.as_uri()):
        doc = (
            f'<?xml version="1.0"?>\n<!DOCTYPE coverage [<!ENTITY xxe SYSTEM "{target}">]>\n'
            + COBERTURA_BODY.format(source="&xxe;")
        ).encode()
        error = refused(doc, "cobertura")
        assert SECRET not in error.message and "root:" not in error.message


@pytest.mark.parametrize(
    "declaration",
    ['<!ENTITY xxe SYSTEM "{url}/entity">', '<!ENTITY % remote SYSTEM "{url}/parameter.dtd"> %remote;'],
)
def test_an_entity_on_the_network_is_refused_and_never_fetched(server: Server, declaration: str) -> None:
    subset = declaration.format(url=server.url)
    reference = "&xxe;" if "xxe" in subset else "plain"
    cobertura = f"<!DOCTYPE coverage [{subset}]>" + COBERTURA_BODY.format(source=reference)
    jacoco = f"<!DOCTYPE report [{subset}]>" + JACOCO_BODY.format(name=reference)
    refused(cobertura.encode(), "cobertura")
    refused(jacoco.encode(), "jacoco")
    assert server.requests == []


def test_a_cobertura_doctype_on_the_network_is_never_fetched_and_the_report_parses(server: Server) -> None:
    doctype = f"<!DOCTYPE coverage SYSTEM '{server.url}/coverage-04.dtd'>\n"
    doc = doctype + COBERTURA_BODY.format(source="/src")
    report = parse(doc.encode())
    assert report.totals["lines"].to_dict() == {"found": 1, "hit": 1}
    assert report.source_roots == ("/src",)  # read by a second, equally safe, pass
    # The error path rereads the document to find a line: still offline.
    bad = doc.replace('hits="1"/>', 'hits="-1"/>')
    assert refused(bad.encode(), "cobertura").details["line"] == 2
    assert server.requests == []


def test_jacocos_doctype_is_never_fetched_from_the_network(server: Server) -> None:
    doctype = f'<!DOCTYPE report PUBLIC "-//JACOCO//DTD Report 1.1//EN" "{server.url}/report.dtd">'
    doc = doctype + JACOCO_BODY.format(name="r")
    report = parse(doc.encode())
    assert report.format == "jacoco" and report.metadata["name"] == "r"
    assert server.requests == []


def test_jacocos_relative_report_dtd_is_never_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A broken report.dtd, beside the report and in the working directory: a
    # parser that loaded it would fail, as lxml with load_dtd=True does.
    (tmp_path / "report.dtd").write_text("<!ENTITY this is not a DTD")
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "jacoco.xml"
    path.write_bytes(
        b'<?xml version="1.0"?><!DOCTYPE report PUBLIC "-//JACOCO//DTD Report 1.1//EN" "report.dtd">'
        + JACOCO_BODY.format(name="r").encode()
    )
    assert parse(path).totals["lines"].to_dict() == {"found": 1, "hit": 1}
    with pytest.raises(etree.XMLSyntaxError, match=r"report\.dtd"):
        etree.parse(str(path), etree.XMLParser(load_dtd=True))


def test_a_cobertura_doctype_naming_a_local_file_is_never_loaded(tmp_path: Path) -> None:
    dtd = tmp_path / "coverage-04.dtd"
    dtd.write_text("<!ENTITY this is not a DTD")
    doc = f"<!DOCTYPE coverage SYSTEM '{dtd.as_uri()}'>\n" + COBERTURA_BODY.format(source="/src")
    assert parse(doc.encode()).source_roots == ("/src",)
    with pytest.raises(etree.XMLSyntaxError, match=r"coverage-04\.dtd"):
        etree.fromstring(doc.encode(), etree.XMLParser(load_dtd=True))


def test_libxml2s_depth_limit_stays_on() -> None:
    doc = b'<coverage line-rate="1">' + b"<a>" * 300 + b"</a>" * 300 + b"</coverage>"
    assert "Excessive depth" in refused(doc, "cobertura").message


def test_a_text_node_over_libxml2s_limit_is_refused() -> None:
    doc = COBERTURA_BODY.format(source="a" * (11 * 1024 * 1024)).encode()
    assert "Text node too long" in refused(doc, "cobertura").message


# -- the parser configuration itself ----------------------------------------------
def test_the_server_records_a_fetch(server: Server) -> None:
    """The control for the network tests. (libxml2 2.14 is built without HTTP;
    no_network keeps a build that has it offline too.)"""
    with urllib.request.urlopen(f"{server.url}/report.dtd") as response:
        response.read()
    assert server.requests == ["/report.dtd"]


def test_the_safe_parser_leaves_an_external_file_entity_unread(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    doc = f'<!DOCTYPE r [<!ENTITY xxe SYSTEM "{secret.as_uri()}">]><r>&xxe;</r>'.encode()
    assert etree.tostring(etree.fromstring(doc, safe_xml.safe_parser())) == b"<r>&xxe;</r>"
    # An lxml parser that resolves entities does read it.
    assert SECRET in etree.tostring(etree.fromstring(doc, etree.XMLParser(resolve_entities=True))).decode()


def test_the_safe_parser_leaves_an_external_entity_unexpanded_and_offline(server: Server) -> None:
    doc = f'<!DOCTYPE r [<!ENTITY xxe SYSTEM "{server.url}/entity">]><r>&xxe;</r>'.encode()
    root = etree.fromstring(doc, safe_xml.safe_parser())
    assert etree.tostring(root) == b"<r>&xxe;</r>"
    assert server.requests == []


def test_the_safe_parser_refuses_a_billion_laughs_without_expanding_it() -> None:
    doc = billion_laughs("r") + b"<r>&lol9;</r>"
    with pytest.raises(etree.XMLSyntaxError, match="amplification"):
        etree.fromstring(doc, safe_xml.safe_parser())


def test_the_safe_parser_never_loads_a_dtd_from_the_network(server: Server) -> None:
    doc = f'<!DOCTYPE report SYSTEM "{server.url}/report.dtd"><report/>'.encode()
    etree.fromstring(doc, safe_xml.safe_parser())
    assert server.requests == []
