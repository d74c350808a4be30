package io.stockade.proxy.backend.s3;

import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link Listings}: the XML editing, against listings shaped as AWS S3 and s3proxy write them. */
class S3ListingsTest {

    /** A probe over a fixed set of tombstones and of prefixes holding only tombstones; records what it was asked. */
    private static final class FixedProbe implements Listings.Probe {
        final Set<String> tombstones;
        final Set<String> deadPrefixes;
        final Set<String> asked = ConcurrentHashMap.newKeySet();

        FixedProbe(Set<String> tombstones, Set<String> deadPrefixes) {
            this.tombstones = tombstones;
            this.deadPrefixes = deadPrefixes;
        }

        @Override
        public boolean tombstone(String key, String versionId) {
            asked.add(key + (versionId == null ? "" : "@" + versionId));
            return tombstones.contains(key + (versionId == null ? "" : "@" + versionId));
        }

        @Override
        public boolean live(String prefix) {
            asked.add(prefix);
            return !deadPrefixes.contains(prefix);
        }
    }

    private static String contents(String key, long size) {
        return "<Contents><Key>" + key + "</Key><LastModified>2026-11-30T10:00:00.000Z</LastModified><ETag>"
                + "&quot;d41d8cd98f00b204e9800998ecf8427e&quot;</ETag><Size>" + size + "</Size><StorageClass>STANDARD"
                + "</StorageClass></Contents>";
    }

    @Test
    void v2DropsTombstonesAndCorrectsKeyCountAndAsksOnlyAboutEntriesOfATombstonesSize() {
        String xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc"
                + "/2006-03-01/\"><Name>b</Name><Prefix></Prefix><KeyCount>6</KeyCount><MaxKeys>1000</MaxKeys>"
                + "<IsTruncated>false</IsTruncated>" + contents("a", 5) + contents("gone", Tombstone.SIZE)
                + contents("old", 0) + contents("empty", 0) + contents("big", Tombstone.SIZE + 1) + contents("z", 1)
                + "</ListBucketResult>";
        FixedProbe probe = new FixedProbe(Set.of("gone", "old"), Set.of());
        Listings.Filtered f = Listings.filter(xml, Listings.Kind.V2, false, probe);
        assertEquals(2, f.hidden());
        assertFalse(f.xml().contains("<Key>gone</Key>") || f.xml().contains("<Key>old</Key>"), f.xml());
        assertTrue(f.xml().contains("<Key>empty</Key>") && f.xml().contains("<Key>a</Key>")
                && f.xml().contains("<Key>big</Key>") && f.xml().contains("<Key>z</Key>"), f.xml());
        assertTrue(f.xml().contains("<KeyCount>4</KeyCount>"), f.xml());
        // today's tombstones and an earlier version's zero-byte ones are read with HEAD; no other size is
        assertEquals(Set.of("gone", "old", "empty"), probe.asked);
        assertTrue(f.xml().startsWith("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns="), f.xml());
    }

    @Test
    void everyTombstoneHasItsOwnBytesOfOneFixedSize() {
        byte[] one = Tombstone.body();
        byte[] two = Tombstone.body();
        assertEquals(Tombstone.SIZE, one.length);
        assertEquals(Tombstone.SIZE, two.length);
        assertFalse(java.util.Arrays.equals(one, two), "two tombstones with the same bytes have the same ETag");
    }

    @Test
    void aListingWithoutTombstonesIsLeftByteForByte() {
        String xml = "<ListBucketResult><KeyCount>1</KeyCount><IsTruncated>false</IsTruncated>" + contents("a", 0)
                + "</ListBucketResult>";
        Listings.Filtered f = Listings.filter(xml, Listings.Kind.V2, false, new FixedProbe(Set.of(), Set.of()));
        assertEquals(0, f.hidden());
        assertEquals(xml, f.xml());
    }

    @Test
    void aTruncatedV1PageGetsTheStoresLastKeyAsNextMarkerEvenWhenEveryEntryWasHidden() {
        String xml = "<ListBucketResult><Name>b</Name><Marker></Marker><MaxKeys>2</MaxKeys>"
                + "<IsTruncated>true</IsTruncated>" + contents("t1", 0) + contents("t2", 0) + "</ListBucketResult>";
        Listings.Filtered f = Listings.filter(xml, Listings.Kind.V1, false, new FixedProbe(Set.of("t1", "t2"),
                Set.of()));
        assertEquals(2, f.hidden());
        assertFalse(f.xml().contains("<Contents>"), f.xml());
        assertTrue(f.xml().contains("<IsTruncated>true</IsTruncated><NextMarker>t2</NextMarker>"), f.xml());
        // a page that says NextMarker itself keeps it
        String withMarker = xml.replace("<IsTruncated>true</IsTruncated>",
                "<IsTruncated>true</IsTruncated><NextMarker>t2</NextMarker>");
        assertEquals(1, Listings.filter(withMarker, Listings.Kind.V1, false, new FixedProbe(Set.of("t1"), Set.of()))
                .xml().split("<NextMarker>", -1).length - 1);
    }

    @Test
    void urlEncodedKeysAreDecodedForTheProbeAndTheMarkerStaysEncoded() {
        String xml = "<ListBucketResult><EncodingType>url</EncodingType><IsTruncated>true</IsTruncated>"
                + contents("dir/a+b%2Bc%26", 0) + "</ListBucketResult>";
        FixedProbe probe = new FixedProbe(Set.of("dir/a b+c&"), Set.of());
        Listings.Filtered f = Listings.filter(xml, Listings.Kind.V1, true, probe);
        assertEquals(Set.of("dir/a b+c&"), probe.asked);
        assertEquals(1, f.hidden());
        assertTrue(f.xml().contains("<NextMarker>dir/a+b%2Bc%26</NextMarker>"), f.xml());
    }

    @Test
    void xmlEscapedKeysAreUnescapedForTheProbe() {
        String xml = "<ListBucketResult><KeyCount>1</KeyCount>" + contents("a&amp;b&lt;c", 0) + "</ListBucketResult>";
        FixedProbe probe = new FixedProbe(Set.of("a&b<c"), Set.of());
        assertEquals(1, Listings.filter(xml, Listings.Kind.V2, false, probe).hidden());
    }

    @Test
    void commonPrefixesHoldingOnlyTombstonesAreHidden() {
        String xml = "<ListBucketResult><KeyCount>3</KeyCount><Delimiter>/</Delimiter><IsTruncated>false"
                + "</IsTruncated>" + contents("top", 3) + "<CommonPrefixes><Prefix>dead/</Prefix></CommonPrefixes>"
                + "<CommonPrefixes><Prefix>live/</Prefix></CommonPrefixes></ListBucketResult>";
        Listings.Filtered f = Listings.filter(xml, Listings.Kind.V2, false, new FixedProbe(Set.of(),
                Set.of("dead/")));
        assertEquals(1, f.hidden());
        assertFalse(f.xml().contains("dead/"), f.xml());
        assertTrue(f.xml().contains("<Prefix>live/</Prefix>"), f.xml());
        assertTrue(f.xml().contains("<KeyCount>2</KeyCount>"), f.xml());
    }

    @Test
    void versionsAreAskedAboutWithTheirIdAndDeleteMarkersAreLeft() {
        String xml = "<ListVersionsResult><IsTruncated>false</IsTruncated>"
                + "<Version><Key>k</Key><VersionId>v2</VersionId><IsLatest>true</IsLatest><Size>0</Size></Version>"
                + "<Version><Key>k</Key><VersionId>v1</VersionId><IsLatest>false</IsLatest><Size>7</Size></Version>"
                + "<Version><Key>n</Key><VersionId>null</VersionId><IsLatest>true</IsLatest><Size>0</Size></Version>"
                + "<DeleteMarker><Key>d</Key><VersionId>v9</VersionId></DeleteMarker></ListVersionsResult>";
        FixedProbe probe = new FixedProbe(Set.of("k@v2", "n"), Set.of());
        Listings.Filtered f = Listings.filter(xml, Listings.Kind.VERSIONS, false, probe);
        assertEquals(Set.of("k@v2", "n"), probe.asked);
        assertEquals(2, f.hidden());
        assertTrue(f.xml().contains("<VersionId>v1</VersionId>") && f.xml().contains("<DeleteMarker>"), f.xml());
        assertFalse(f.xml().contains("v2") || f.xml().contains("<Key>n</Key>"), f.xml());
    }

    @Test
    void aProbeThatCannotAnswerFailsTheListing() {
        String xml = "<ListBucketResult>" + contents("a", 0) + "</ListBucketResult>";
        Listings.Probe failing = new Listings.Probe() {
            @Override
            public boolean tombstone(String key, String versionId) {
                throw new Listings.Unavailable("HEAD answered 500");
            }

            @Override
            public boolean live(String prefix) {
                return true;
            }
        };
        Listings.Unavailable e = assertThrows(Listings.Unavailable.class,
                () -> Listings.filter(xml, Listings.Kind.V2, false, failing));
        assertTrue(e.getMessage().contains("500"));
    }

    @Test
    void pagesReadKeysSizesAndTheNextToken() {
        Listings.Page page = Listings.page("<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>"
                + "tok&amp;1</NextContinuationToken>" + contents("a&amp;b", 0) + contents("c", 12)
                + "</ListBucketResult>");
        assertEquals(List.of(new Listings.Entry("a&b", 0), new Listings.Entry("c", 12)), page.entries());
        assertEquals("tok&1", page.next());
        assertEquals(null, Listings.page("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>")
                .next());
    }
}
