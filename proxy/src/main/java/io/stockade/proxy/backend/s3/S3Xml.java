package io.stockade.proxy.backend.s3;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import javax.xml.XMLConstants;
import javax.xml.parsers.DocumentBuilder;
import javax.xml.parsers.DocumentBuilderFactory;

import io.stockade.proxy.problem.Statuses;

import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerResponse;
import org.jspecify.annotations.Nullable;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/** S3's XML: error answers, and the request bodies the proxy must read (DeleteObjects). */
final class S3Xml {
    static final String NS = "http://s3.amazonaws.com/doc/2006-03-01/";

    private S3Xml() {
    }

    /** Sends an S3 error ({@code <Error><Code>..}); a HEAD answer carries no body, as S3's own. */
    static void error(ServerResponse res, boolean head, int status, String code, String message,
                      @Nullable String resource, Map<String, String> headers) {
        res.status(Statuses.of(status));
        headers.forEach(res::header);
        String requestId = UUID.randomUUID().toString();
        res.header("x-amz-request-id", requestId);
        res.header("x-amz-error-code", code);
        if (head) {
            res.send();
            return;
        }
        String body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + escape(code) + "</Code><Message>"
                + escape(message) + "</Message>" + (resource == null ? "" : "<Resource>" + escape(resource)
                + "</Resource>") + "<RequestId>" + requestId + "</RequestId></Error>";
        res.header(HeaderNames.CONTENT_TYPE, "application/xml");
        res.send(body.getBytes(StandardCharsets.UTF_8));
    }

    /** The text of an XML element's content: the five predefined entities and numeric references decoded. */
    static String unescape(String text) {
        if (text.indexOf('&') < 0) {
            return text;
        }
        StringBuilder b = new StringBuilder(text.length());
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            int semi = c == '&' ? text.indexOf(';', i) : -1;
            if (semi < 0) {
                b.append(c);
                continue;
            }
            String entity = text.substring(i + 1, semi);
            switch (entity) {
                case "lt" -> b.append('<');
                case "gt" -> b.append('>');
                case "amp" -> b.append('&');
                case "quot" -> b.append('"');
                case "apos" -> b.append('\'');
                default -> {
                    if (entity.startsWith("#x")) {
                        b.appendCodePoint(Integer.parseInt(entity.substring(2), 16));
                    } else if (entity.startsWith("#")) {
                        b.appendCodePoint(Integer.parseInt(entity.substring(1)));
                    } else {
                        b.append(text, i, semi + 1);
                    }
                }
            }
            i = semi;
        }
        return b.toString();
    }

    static String escape(String text) {
        StringBuilder b = new StringBuilder(text.length() + 16);
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '<' -> b.append("&lt;");
                case '>' -> b.append("&gt;");
                case '&' -> b.append("&amp;");
                case '"' -> b.append("&quot;");
                case '\'' -> b.append("&apos;");
                default -> {
                    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
                        b.append("&#").append((int) c).append(';');
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.toString();
    }

    /** The body does not parse, or is not what the operation expects. */
    static final class Malformed extends Exception {
        Malformed(String message) {
            super(message, null, false, false);
        }

        /** The message it was made with: never null. */
        @Override
        public String getMessage() {
            return Objects.requireNonNull(super.getMessage(), "made with a message");
        }
    }

    /** A DeleteObjects request: the keys, and whether only errors are answered. */
    record DeleteRequest(List<String> keys, boolean quiet) {
    }

    static DeleteRequest parseDelete(byte[] body) throws Malformed {
        Element root = parse(body);
        if (!root.getLocalName().equals("Delete")) {
            throw new Malformed("the root element must be <Delete>, was <" + root.getLocalName() + ">");
        }
        List<String> keys = new ArrayList<>();
        boolean quiet = false;
        for (Node n = root.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (!(n instanceof Element e)) {
                continue;
            }
            switch (e.getLocalName()) {
                case "Quiet" -> quiet = Boolean.parseBoolean(e.getTextContent().trim());
                case "Object" -> {
                    String key = child(e, "Key");
                    if (key == null || key.isEmpty()) {
                        throw new Malformed("an <Object> has no <Key>");
                    }
                    if (child(e, "VersionId") != null) {
                        throw new Malformed("deleting a version (VersionId) is not supported through the proxy");
                    }
                    keys.add(key);
                }
                default -> throw new Malformed("unexpected element <" + e.getLocalName() + "> in <Delete>");
            }
        }
        if (keys.isEmpty() || keys.size() > 1000) {
            throw new Malformed("a <Delete> must name 1..1000 objects, named " + keys.size());
        }
        return new DeleteRequest(keys, quiet);
    }

    /** Checks that a CompleteMultipartUpload body lists parts, each with a number. */
    static void checkComplete(byte[] body) throws Malformed {
        Element root = parse(body);
        if (!root.getLocalName().equals("CompleteMultipartUpload")) {
            throw new Malformed("the root element must be <CompleteMultipartUpload>");
        }
        NodeList parts = root.getElementsByTagNameNS("*", "Part");
        if (parts.getLength() == 0) {
            throw new Malformed("<CompleteMultipartUpload> lists no <Part>");
        }
        for (int i = 0; i < parts.getLength(); i++) {
            String number = child((Element) parts.item(i), "PartNumber");
            if (number == null || !number.trim().matches("[0-9]{1,5}")) {
                throw new Malformed("a <Part> has no valid <PartNumber>");
            }
        }
    }

    private static @Nullable String child(Element parent, String name) {
        for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element e && e.getLocalName().equals(name)) {
                return e.getTextContent();
            }
        }
        return null;
    }

    private static Element parse(byte[] body) throws Malformed {
        try {
            DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
            f.setNamespaceAware(true);
            f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
            f.setFeature(XMLConstants.FEATURE_SECURE_PROCESSING, true);
            f.setXIncludeAware(false);
            f.setExpandEntityReferences(false);
            DocumentBuilder builder = f.newDocumentBuilder();
            builder.setErrorHandler(null);
            Document doc = builder.parse(new ByteArrayInputStream(body));
            return doc.getDocumentElement();
        } catch (Exception e) {
            throw new Malformed("The XML you provided was not well-formed or did not validate against our published"
                    + " schema");
        }
    }
}
