package io.stockade.proxy.backend.s3;

import java.util.Iterator;
import java.util.concurrent.ConcurrentHashMap;

import org.jspecify.annotations.Nullable;

/**
 * What this proxy last wrote to each object, the atomic class's {@code etag-cache}: the token it wrote and the ETag
 * the store answered. With it, the next write of the object is sent {@code If-Match: <that ETag>} without a HEAD
 * first; a write by anyone else since changed the ETag, so the store refuses (412) and the write is judged again
 * against a fresh HEAD. Only a yes is taken from here: a token the entry would refuse, or a client's own condition,
 * is always judged against the store.
 * <p>
 * Safe when every write of the object goes through this proxy (one replica per object): the writes of one object are
 * serialized within the proxy, and each either records its answer here or forgets the entry, fenced or not, through
 * whichever atomic-class policy it came (one cache per upstream endpoint in the process, {@link EndpointWrites}).
 * A serialized-class policy on the same endpoint neither reads nor keeps it: its writes leave no token in the
 * object's metadata, so the HEAD the cache saves would not refuse the next write either. With several replicas a
 * newer holder writing, through another replica, the same bytes as this proxy's last write leaves the ETag as it was
 * (an S3 ETag is the MD5 of the bytes); the entry would then let an older token's write land. Hence off by default
 * (docs/s3.md).
 * <p>
 * Bounded: past {@code capacity} entries, an arbitrary entry is dropped for each new one (a dropped entry only costs
 * one HEAD).
 */
final class EtagCache {
    /** The proxy's own last write of an object: the ETag the store answered and the token it carried. */
    record Known(String etag, long token, boolean tombstone) {
    }

    private volatile int capacity;
    private final ConcurrentHashMap<String, Known> entries = new ConcurrentHashMap<>();

    EtagCache(int capacity) {
        this.capacity = capacity;
    }

    /**
     * Sets how many entries are kept (the largest {@code etag-cache} of the policies sharing it); entries past a
     * smaller capacity are dropped, all of them at 0 (a dropped entry only costs one HEAD).
     */
    synchronized void capacity(int n) {
        capacity = n;
        if (n == 0 || entries.size() > n) {
            entries.clear();
        }
    }

    /** How many objects are remembered now. */
    int size() {
        return entries.size();
    }

    boolean enabled() {
        return capacity > 0;
    }

    @Nullable Known get(String object) {
        return capacity == 0 ? null : entries.get(object);
    }

    /** Records a conditional write the store accepted; forgets the object when the answer carried no ETag. */
    void wrote(String object, @Nullable String etag, long token, boolean tombstone) {
        if (capacity == 0) {
            return;
        }
        if (etag == null || etag.isBlank()) {
            entries.remove(object);
            return;
        }
        if (!entries.containsKey(object) && entries.size() >= capacity) {
            Iterator<String> any = entries.keySet().iterator();
            if (any.hasNext()) {
                entries.remove(any.next());
            }
        }
        entries.put(object, new Known(etag, token, tombstone));
    }

    /** The object changed in a way not recorded here (or may have): its next write reads it first. */
    void forget(String object) {
        if (capacity > 0) {
            entries.remove(object);
        }
    }

    /** Objects changed that cannot be named one by one (an unfenced DeleteObjects): every write reads first. */
    void clear() {
        entries.clear();
    }
}
