package io.stockade.proxy.backend.s3;

import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The object metadata the proxy writes at the store: an object's highest token (under two names) and a tombstone's
 * mark. No client reads it back: GET and HEAD answers leave it out ({@link #OWN_META}).
 */
final class ObjectMeta {
    /**
     * The user metadata a client may send its token as ({@code token-from-metadata}: the AWS CLI's {@code --metadata
     * fencing-token=N}), and the name under which earlier builds kept an object's highest token; the proxy still
     * writes it beside {@link #RECORD_META}, so that an earlier build (a replica not yet upgraded, a rollback) reads
     * every object's fence.
     */
    static final String TOKEN_META = "x-amz-meta-fencing-token";
    /**
     * The proxy's own record of the highest token written to an object: a name no client sends, so that metadata a
     * tool copied from an object and sends back (s3cmd's modify, boto3's copy_object with head_object's Metadata) is
     * recognised and refused, never read as a token.
     */
    static final String RECORD_META = "x-amz-meta-stockade-fence";
    /** The object metadata marking a tombstone: a deleted object whose token must outlive it. */
    static final String DELETED_META = "x-amz-meta-fencing-deleted";
    /** The metadata the proxy writes and never shows a client (GET and HEAD answers leave them out). */
    static final Set<String> OWN_META = Set.of(TOKEN_META, RECORD_META, DELETED_META);

    private ObjectMeta() {
    }

    /** The metadata that records {@code token} as an object's highest: under both names (see {@link #TOKEN_META}). */
    static List<Map.Entry<String, String>> tokenRecord(long token) {
        String value = Long.toString(token);
        return List.of(Map.entry(RECORD_META, value), Map.entry(TOKEN_META, value));
    }
}
