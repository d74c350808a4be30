package io.stockade.proxy.listener;

import io.helidon.http.Headers;
import io.helidon.http.encoding.ContentDecoder;
import io.helidon.http.encoding.ContentEncoder;
import io.helidon.http.encoding.ContentEncodingContext;
import io.helidon.http.encoding.ContentEncodingContextConfig;

/**
 * Helidon's content encodings, but request bodies are never decoded: they reach the backend as sent. A proxy passes
 * bodies on as they came: no decoding of {@code Content-Encoding}, and no 400 for encodings Helidon does not know,
 * such as S3's {@code aws-chunked}.
 *
 * @param delegate Helidon's own content encodings, for the answers the proxy writes itself
 */
public record PassThroughEncoding(ContentEncodingContext delegate) implements ContentEncodingContext {
    @Override
    public boolean contentEncodingEnabled() {
        return delegate.contentEncodingEnabled();
    }

    @Override
    public boolean contentDecodingEnabled() {
        return true; // "enabled", with a decoder that passes every encoding through (Helidon refuses
        // a Content-Encoding header outright when decoding is disabled)
    }

    @Override
    public boolean contentEncodingSupported(String encodingId) {
        return delegate.contentEncodingSupported(encodingId);
    }

    @Override
    public boolean contentDecodingSupported(String encodingId) {
        return true;
    }

    @Override
    public ContentEncoder encoder(String encodingId) {
        return delegate.encoder(encodingId);
    }

    @Override
    public ContentDecoder decoder(String encodingId) {
        return ContentDecoder.NO_OP;
    }

    @Override
    public ContentEncoder encoder(Headers headers) {
        return delegate.encoder(headers);
    }

    @Override
    public ContentEncodingContextConfig prototype() {
        return delegate.prototype();
    }
}
