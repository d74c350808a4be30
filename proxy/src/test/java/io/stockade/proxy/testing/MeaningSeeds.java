package io.stockade.proxy.testing;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.stockade.proxy.testing.MeaningGrammar.Builder;
import io.stockade.proxy.testing.MeaningGrammar.Request;
import io.stockade.proxy.testing.MeaningGrammar.Token;

/**
 * The seeds of the meaning fuzzers: every request of the default-deny issue, as its reproductions send them
 * ({@code S3ClosedTableIT}, {@code WebDavIT}, {@code MethodOverrideIT}), each sequence starting with the write that
 * fences the victim. Tokens are relative to the fence the request meets ({@link Token}), so a sequence replays the
 * reproduction whatever ran before it. The fuzzers run every sequence once ({@code @Example}) and draw single seeds
 * among the generated requests.
 */
public final class MeaningSeeds {
    private MeaningSeeds() {
    }

    private static final String XML = "<x>replaced without a token</x>";

    /** The S3 sequences, by name. Resources are named as the store names them: bucket/key. */
    public static Map<String, List<Request>> s3Sequences() {
        Map<String, List<Request>> out = new LinkedHashMap<>();
        String ret = "/mfz/seed/ret";
        out.put("ignored sub-resource replaces a fenced object", List.of(
                put(ret, Token.HIGHER, "fenced"),
                new Builder("PUT", ret).param("retention", null).header("content-type", "application/xml").body(XML)
                        .about("mfz/seed/ret").build(),
                new Builder("PUT", ret).param("legal-hold", null).header("content-type", "application/xml").body(XML)
                        .about("mfz/seed/ret").build(),
                new Builder("POST", ret).param("restore", null).body(XML).about("mfz/seed/ret").build(),
                new Builder("PUT", ret).param("encryption", null).body(XML).token(Token.HIGHER)
                        .about("mfz/seed/ret").build(),
                put(ret, Token.STALE, "zombie")));
        String ac = "/mfz/seed/ac";
        List<Request> copy = new ArrayList<>(List.of(put("/mfz/seed/src", Token.HIGHER, "the source's bytes"),
                put(ac, Token.HIGHER, "fenced")));
        for (String sub : List.of("acl", "tagging")) {
            copy.add(new Builder("PUT", ac).param(sub, null).header("x-amz-copy-source", "/mfz/seed/src")
                    .token(Token.EQUAL).about("mfz/seed/ac").build());
        }
        copy.add(new Builder("PUT", ac).param("acl", null).header("x-amz-copy-source", "/mfz/seed/src")
                .about("mfz/seed/ac").build());
        copy.add(new Builder("DELETE", ac).header("x-amz-copy-source", "/mfz/seed/src").token(Token.HIGHER)
                .about("mfz/seed/ac").build());
        copy.add(put(ac, Token.STALE, "zombie"));
        out.put("a copy source on a sub-resource write", copy);
        String acl = "/mfz/seed/acl";
        out.put("object ACL writes", List.of(put(acl, Token.HIGHER, "fenced"),
                new Builder("PUT", acl).param("acl", null).header("x-amz-acl", "public-read").token(Token.STALE)
                        .about("mfz/seed/acl").build(),
                new Builder("PUT", acl).param("acl", null).header("x-amz-acl", "public-read").about("mfz/seed/acl")
                        .build(),
                new Builder("PUT", acl).param("acl", null).header("x-amz-acl", "public-read").token(Token.EQUAL)
                        .about("mfz/seed/acl").build(),
                put(acl, Token.STALE, "zombie")));
        out.put("a key the store folds", List.of(put("/mfz/seed/k", Token.HIGHER, "fenced"),
                new Builder("PUT", "/mfz/seed/k/").token(Token.STALE, 2).about("mfz/seed/k").build(),
                new Builder("DELETE", "/mfz/seed/k/").token(Token.STALE, 2).about("mfz/seed/k").build(),
                new Builder("PUT", "/mfz/seed/k/").token(Token.HIGHER).about("mfz/seed/k").build(),
                put("/mfz/seed/k", Token.STALE, "zombie")));
        String p = "/mfz/seed/p";
        out.put("unsigned x-amz headers", List.of(put(p, Token.HIGHER, "fenced"),
                new Builder("PUT", p).presigned().header("x-amz-copy-source", "/mot/ov", false).token(Token.HIGHER)
                        .about("mfz/seed/p").build(),
                new Builder("PUT", p).header("x-amz-meta-owner", "mallory", false).body("unsigned metadata")
                        .token(Token.HIGHER).about("mfz/seed/p").build(),
                put(p, Token.STALE, "zombie")));
        List<Request> bucket = new ArrayList<>(List.of(
                new Builder("PUT", "/nob").target("bucket").token(Token.HIGHER).about("nob").build(),
                new Builder("PUT", "/mfz").target("bucket").param("acl", null).header("x-amz-acl", "public-read")
                        .about("mfz").build(),
                new Builder("DELETE", "/mpt").target("bucket").about("mpt").build()));
        for (String sub : List.of("lifecycle", "policy", "versioning", "cors", "tagging", "object-lock")) {
            bucket.add(new Builder("PUT", "/mfz").target("bucket").param(sub, null).body("<x/>").about("mfz").build());
            bucket.add(new Builder("DELETE", "/mfz").target("bucket").param(sub, null).about("mfz").build());
        }
        out.put("bucket writes", bucket);
        String u = "/mfz/seed/u";
        out.put("unknown parameters, methods and headers", List.of(put(u, Token.HIGHER, "fenced"),
                new Builder("GET", u).param("foo", "1").about("mfz/seed/u").build(),
                new Builder("GET", "/mfz").target("bucket").param("foo", null).about("mfz").build(),
                new Builder("PATCH", u).body("a patch").token(Token.HIGHER).about("mfz/seed/u").build(),
                new Builder("put", u).body("a lower-case put").token(Token.HIGHER).about("mfz/seed/u").build(),
                new Builder("put", u).signedAs("PUT").body("a lower-case put").token(Token.STALE).about("mfz/seed/u")
                        .build(),
                new Builder("PUT", u).header("x-amz-rename-source", "/mfz/elsewhere").body("renamed?")
                        .token(Token.HIGHER).about("mfz/seed/u").build(),
                new Builder("PUT", u).param("x", "1").body("unknown").about("mfz/seed/u").build(),
                new Builder("DELETE", u).param("x", "1").about("mfz/seed/u").build(),
                new Builder("PUT", u).param("acl", null).param("x", "1").token(Token.HIGHER).about("mfz/seed/u")
                        .build(),
                new Builder("DELETE", u).param("uploads", null).token(Token.HIGHER).about("mfz/seed/u").build(),
                put(u, Token.STALE, "zombie")));
        String h = "/mfz/seed/hoisted";
        out.put("parameters a presigner hoists", List.of(
                new Builder("PUT", h).presigned().param("x-id", "PutObject").param("x-amz-meta-owner", "js")
                        .body("presigned by the JS SDK").token(Token.HIGHER).about("mfz/seed/hoisted").build(),
                new Builder("PUT", h).presigned().param("x-amz-meta-fencing-token", "8").body("token in the query")
                        .about("mfz/seed/hoisted").build(),
                new Builder("PUT", h).presigned().param("x-amz-copy-source", "/mot/ov").token(Token.HIGHER)
                        .about("mfz/seed/hoisted").build()));
        out.put("copies carry their own token", List.of(put("/mfz/seed/low", Token.HIGHER, "low"),
                put("/mfz/seed/high", Token.HIGHER, "high"), put("/mfz/seed/high", Token.HIGHER, "higher"),
                new Builder("PUT", "/mfz/seed/high").header("x-amz-copy-source", "/mfz/seed/low")
                        .header("x-amz-metadata-directive", "COPY").token(Token.STALE).about("mfz/seed/high").build(),
                new Builder("PUT", "/mfz/seed/high").header("x-amz-copy-source", "/mfz/seed/low")
                        .token(Token.EQUAL).about("mfz/seed/high").build(),
                new Builder("PUT", "/mfz/seed/high").header("x-amz-copy-source", "/mfz/seed/low")
                        .header("x-amz-meta-fencing-token", "1").header("x-amz-metadata-directive", "REPLACE")
                        .token(Token.HIGHER).about("mfz/seed/high").build(),
                new Builder("PUT", "/mfz/seed/high").header("x-amz-copy-source", "/mfz/seed/low")
                        .header("Connection", "x-amz-copy-source", false).token(Token.HIGHER)
                        .about("mfz/seed/high").build(),
                put("/mfz/seed/high", Token.STALE, "zombie")));
        return out;
    }

    /** The WebDAV sequences, by name. Resources are named as nginx's root holds them. */
    public static Map<String, List<Request>> webdavSequences() {
        Map<String, List<Request>> out = new LinkedHashMap<>();
        List<Request> plain = new ArrayList<>(List.of(dav("PUT", "plain", "t1", "a.txt", Token.HIGHER),
                dav("PUT", "plain", "t1", "b.txt", Token.HIGHER), dav("PUT", "plain", "t2", "c", Token.HIGHER)));
        for (String method : List.of("COPY", "MOVE", "MKCOL", "PROPPATCH", "LOCK", "UNLOCK", "PROPFIND", "SEARCH",
                "BREW")) {
            plain.add(new Builder(method, method.equals("MOVE") ? "/plain/t1/b.txt" : "/plain/t2/c").target("plain")
                    .header("Destination", "http://HOST/plain/t1/a.txt").header("Overwrite", "T")
                    .body(method.startsWith("PROP") || method.equals("LOCK")
                            ? "<?xml version=\"1.0\"?><propertyupdate xmlns=\"DAV:\"/>" : "")
                    .token(Token.STALE).about(MeaningGrammar.davResource("plain", "t1", "a.txt")).build());
        }
        out.put("WebDAV methods a policy does not name", plain);
        out.put("a copy into another policy's resource", List.of(dav("PUT", "plain", "t1", "b.txt", Token.HIGHER),
                dav("PUT", "dav", "t2", "a.txt", Token.HIGHER),
                move("COPY", "dav/t2/a.txt", "/plain/t1/b.txt", Token.HIGHER),
                move("COPY", "dav/t2/a.txt", "http://HOST/plain/t1/b.txt", Token.HIGHER),
                move("COPY", "open/t2/a.txt", "/dav/t1/a.txt", Token.HIGHER)));
        out.put("a fenced copy judged on both scopes", List.of(dav("PUT", "dav", "t2", "b.txt", Token.HIGHER),
                new Builder("PUT", "/dav/t1/a.txt").target("dav").body("victim").token(Token.HIGHER, 2)
                        .about(MeaningGrammar.davResource("dav", "t1", "a.txt"),
                                MeaningGrammar.davResource("dav", "t2", "b.txt")).build(),
                move("COPY", "dav/t2/b.txt", "/dav/t1/a.txt", Token.HIGHER),
                move("MOVE", "dav/t2/b.txt", "/dav/t1/a.txt", Token.HIGHER),
                move("COPY", "dav/t2/b.txt", "/dav/t1/vict%69m.txt", Token.HIGHER),
                new Builder("COPY", "/dav/t2/b.txt").target("dav").header("Destination", "/dav/t1/a.txt")
                        .token(Token.HIGHER, 2).about(MeaningGrammar.davResource("dav", "t1", "a.txt")).build(),
                new Builder("MOVE", "/dav/t1/a.txt").target("dav").header("Destination", "/dav/t2/b.txt")
                        .token(Token.HIGHER).about(MeaningGrammar.davResource("dav", "t1", "a.txt"),
                                MeaningGrammar.davResource("dav", "t2", "b.txt")).build(),
                new Builder("MOVE", "/dav/t2/b.txt").target("dav").header("Destination", "/dav/t1/a.txt")
                        .about(MeaningGrammar.davResource("dav", "t2", "b.txt")).build(),
                dav("PUT", "dav", "t1", "a.txt", Token.STALE)));
        List<Request> destinations = new ArrayList<>(List.of(dav("PUT", "dav", "t1", "b.txt", Token.HIGHER)));
        for (String destination : List.of("/dav/t1/../t1/b.txt", "/dav/t1/%2e%2e/b.txt", "/dav/t1/b.txt?x=1",
                "/dav/t1/b.txt#f", "/dav/t1/b.txt/", "/dav//t1/b.txt", "/dav/t1/a%2Fb", "/dav/t1",
                "//evil/dav/t1/b.txt", "http://evil.example/dav/t1/b.txt", "http://127.0.0.1:1/dav/t1/b.txt",
                "http://user@HOST/dav/t1/b.txt", "ftp://HOST/dav/t1/b.txt", "dav/t1/b.txt", "http://HOST",
                "http://HOST?/dav/t1/b.txt", "/dav/t1/vic;x/b.txt", "/dav/t1/b%00.txt")) {
            destinations.add(move("COPY", "dav/t2/a.txt", destination, Token.HIGHER));
        }
        destinations.add(new Builder("COPY", "/dav/t2/a.txt").target("dav").token(Token.HIGHER).build());
        destinations.add(new Builder("COPY", "/dav/t2/a.txt").target("dav").header("Destination", "/dav/t1/a.txt")
                .header("Destination", "/dav/t1/b.txt").token(Token.HIGHER).build());
        for (String method : List.of("PUT", "DELETE", "GET")) {
            destinations.add(new Builder(method, "/dav/t2/c").target("dav").header("Destination", "/dav/t1/b.txt")
                    .body(method.equals("PUT") ? "x" : "").token(Token.HIGHER)
                    .about(MeaningGrammar.davResource("dav", "t1", "b.txt")).build());
        }
        for (String header : List.of("Depth: 1", "Depth: 2", "Overwrite: t", "Overwrite: yes", "Overwrite: F")) {
            String[] h = header.split(": ");
            destinations.add(new Builder("COPY", "/dav/t2/a.txt").target("dav").header("Destination", "/dav/t1/b.txt")
                    .header(h[0], h[1]).token(Token.HIGHER).about(MeaningGrammar.davResource("dav", "t1", "b.txt"),
                            MeaningGrammar.davResource("dav", "t2", "a.txt")).build());
        }
        out.put("Destination spellings and headers", destinations);
        out.put("method overrides and rewrites", overrides("dav", "t1", "a.txt"));
        out.put("a copy onto itself (found by this fuzzer)", List.of(dav("PUT", "dav", "t2", "a.txt", Token.HIGHER),
                new Builder("COPY", "/dav/t2/a.txt").target("dav").header("Destination", "/dav/t2/a.txt")
                        .header("Overwrite", "T").token(Token.HIGHER)
                        .about(MeaningGrammar.davResource("dav", "t2", "a.txt")).build(),
                new Builder("MOVE", "/dav/t2/a.txt").target("dav").header("Destination", "http://HOST/dav/t2/a.txt")
                        .token(Token.HIGHER).about(MeaningGrammar.davResource("dav", "t2", "a.txt")).build()));
        return out;
    }

    /** The file backend's sequences: the same overrides and WebDAV methods, which it must not act on. */
    public static Map<String, List<Request>> fileSequences() {
        Map<String, List<Request>> out = new LinkedHashMap<>();
        List<Request> methods = new ArrayList<>(List.of(file("PUT", "a", Token.HIGHER), file("PUT", "b",
                Token.HIGHER)));
        for (String method : List.of("COPY", "MOVE", "MKCOL", "PROPPATCH", "LOCK", "PATCH", "POST", "BREW", "put",
                "delete")) {
            methods.add(new Builder(method, "/docs/a").target("docs").header("Destination", "/docs/b")
                    .body("x").token(Token.HIGHER).about("docs/a", "docs/b").build());
        }
        methods.add(new Builder("PUT", "/docs/a").target("docs").header("Destination", "/docs/b").body("with a "
                + "Destination").token(Token.HIGHER).about("docs/a").build());
        out.put("methods outside the table", methods);
        List<Request> overrides = new ArrayList<>();
        for (Request r : overrides("docs", null, "a")) {
            overrides.add(r);
        }
        out.put("method overrides and rewrites", overrides);
        return out;
    }

    /** MethodOverrideIT's requests against one resource. */
    private static List<Request> overrides(String area, String dir, String name) {
        String path = "/" + area + "/" + (dir == null ? "" : dir + "/") + name;
        String about = dir == null ? area + "/" + name : MeaningGrammar.davResource(area, dir, name);
        List<Request> out = new ArrayList<>();
        out.add(new Builder("PUT", path).target(area).body("holder").token(Token.HIGHER).about(about).build());
        for (String header : List.of("X-HTTP-Method-Override: DELETE", "x-http-method-override: PUT",
                "X-HTTP-Method: DELETE", "X-Method-Override: DELETE", "X-Original-URL: /" + area + "/victim",
                "X-Rewrite-URL: /" + area + "/victim", "Connection: X-HTTP-Method-Override")) {
            String[] h = header.split(": ");
            for (String method : List.of("GET", "HEAD", "PUT", "DELETE")) {
                boolean writes = method.equals("PUT") || method.equals("DELETE");
                out.add(new Builder(method, path).target(area).header(h[0], h[1]).body(method.equals("PUT")
                        ? "overridden" : "").token(writes ? Token.HIGHER : Token.NONE).about(about).build());
            }
        }
        for (String query : List.of("_method=DELETE", "x=1&_method=PUT", "%5Fmethod=DELETE", "%5fmethod=DELETE",
                "_METHOD=DELETE", ".method=DELETE", "+_method=DELETE", "_method%5B%5D=DELETE", "a=b;_method=DELETE",
                "_method", "_method=")) {
            for (String method : List.of("GET", "PUT")) {
                Builder b = new Builder(method, path).target(area).body(method.equals("PUT") ? "overridden" : "")
                        .token(method.equals("PUT") ? Token.HIGHER : Token.NONE).about(about);
                for (String pair : query.split("&")) {
                    int eq = pair.indexOf('=');
                    b.param(eq < 0 ? pair : pair.substring(0, eq), eq < 0 ? null : pair.substring(eq + 1));
                }
                out.add(b.build());
            }
        }
        out.add(new Builder("put", path).target(area).body("zombie").token(Token.STALE).about(about).build());
        out.add(new Builder("pUt", path).target(area).body("no token").about(about).build());
        out.add(new Builder("put", path).target(area).body("holder, lower-case").token(Token.HIGHER).about(about)
                .build());
        return out;
    }

    private static Request put(String path, Token token, String body) {
        return new Builder("PUT", path).body(body).token(token).about(path.substring(1)).build();
    }

    private static Request dav(String method, String area, String dir, String name, Token token) {
        return new Builder(method, "/" + area + "/" + dir + "/" + name).target(area).body(method.equals("PUT")
                ? area + " " + dir + " " + name : "").token(token)
                .about(MeaningGrammar.davResource(area, dir, name)).build();
    }

    private static Request move(String method, String source, String destination, Token token) {
        String[] s = source.split("/");
        return new Builder(method, "/" + source).target(s[0]).header("Destination", destination).token(token)
                .about(MeaningGrammar.davResource(s[0], s[1], s[2])).build();
    }

    private static Request file(String method, String name, Token token) {
        return new Builder(method, "/docs/" + name).target("docs").body(method.equals("PUT") ? "file " + name : "")
                .token(token).about("docs/" + name).build();
    }

    /** Every request of the sequences, each named by its sequence, for the generators to draw from. */
    static List<Request> flat(Map<String, List<Request>> sequences) {
        List<Request> out = new ArrayList<>();
        sequences.forEach((name, requests) -> requests.forEach(r -> out.add(r.asSeed(name))));
        return out;
    }

    static List<Request> s3() {
        return flat(s3Sequences());
    }

    static List<Request> webdav() {
        return flat(webdavSequences());
    }

    static List<Request> file() {
        return flat(fileSequences());
    }
}
