package io.stockade.proxy.backend.s3;

import java.util.OptionalLong;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link UploadIds} and {@link Multipart#listed}: the IDs the proxy hands out; a listing as AWS writes it. */
class S3UploadIdsTest {
    private final UploadIds ids = new UploadIds("secret");

    @Test
    void aCreatedIdCarriesItsTokenAndIsBoundToItsObject() throws Exception {
        String id = ids.created("b", "dir/k", "Ab.c_d-e~f", OptionalLong.of(7));
        assertEquals(new UploadIds.Id("Ab.c_d-e~f", true, OptionalLong.of(7)), ids.read("b", "dir/k", id));
        // an upload created without a token gets the ID a listing shows for it (S3 round four, item 2)
        String none = ids.created("b", "dir/k", "up", OptionalLong.empty());
        assertEquals(ids.listed("b", "dir/k", "up"), none);
        assertEquals(new UploadIds.Id("up", false, OptionalLong.empty()), ids.read("b", "dir/k", none));
        assertThrows(UploadIds.Unknown.class, () -> ids.read("b", "dir/other", id));
        assertThrows(UploadIds.Unknown.class, () -> ids.read("c", "dir/k", id));
        assertThrows(UploadIds.Unknown.class, () -> ids.read("b", "dir/k", id.replace("~stk7~", "~stk8~")));
        assertThrows(UploadIds.Unknown.class, () -> ids.read("b", "dir/k", id.replace("~stk7~", "~stl~")));
        assertThrows(UploadIds.Unknown.class, () -> new UploadIds("other secret").read("b", "dir/k", id));
    }

    @Test
    void aStoreIdOrAnythingElseIsNoneOfThem() {
        for (String bare : new String[] {"VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA", "dir/k",
                "", "~", "~stk~", "x~stk7", "x~stk07~0123456789abcdef", "x~stkl~0123456789abcdef"}) {
            assertThrows(UploadIds.Unknown.class, () -> ids.read("b", "dir/k", bare), bare);
        }
    }

    @Test
    void aListingNamesEachUploadByAListedIdForItsKey() throws Exception {
        String xml = """
                <?xml version="1.0" encoding="UTF-8"?>
                <ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
                  <Bucket>b</Bucket><KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker>
                  <NextKeyMarker>a%2Bb%20%26</NextKeyMarker><NextUploadIdMarker>up2</NextUploadIdMarker>
                  <EncodingType>url</EncodingType><MaxUploads>2</MaxUploads><IsTruncated>true</IsTruncated>
                  <Upload><Key>dir/k</Key><UploadId>up&amp;1</UploadId>
                    <Initiator><ID>me</ID><DisplayName>me</DisplayName></Initiator><StorageClass>STANDARD</StorageClass>
                  </Upload>
                  <Upload><Key>a%2Bb+%26</Key><UploadId>up2</UploadId></Upload>
                </ListMultipartUploadsResult>
                """;
        String listed = new Multipart(null, null, "secret").listed("b", xml);
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("<UploadId>([^<]*)</UploadId>").matcher(listed);
        assertTrue(m.find(), listed);
        assertEquals(new UploadIds.Id("up&1", false, OptionalLong.empty()),
                ids.read("b", "dir/k", S3Xml.unescape(m.group(1))));
        assertTrue(m.find(), listed);
        assertEquals(new UploadIds.Id("up2", false, OptionalLong.empty()), ids.read("b", "a+b &", m.group(1)));
        assertFalse(m.find(), listed);
        assertTrue(listed.contains("<NextUploadIdMarker>up2</NextUploadIdMarker>"), listed);
        assertTrue(listed.contains("<Initiator><ID>me</ID>"), listed);
        assertEquals(xml.replaceAll("<UploadId>[^<]*</UploadId>", ""),
                listed.replaceAll("<UploadId>[^<]*</UploadId>", ""));
    }
}
