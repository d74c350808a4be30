package io.stockade.proxy.fence;

import org.jspecify.annotations.Nullable;

/** The store cannot say for sure whether a token is admitted: the caller must refuse the write (503). */
public class StoreUnavailableException extends Exception {
    public StoreUnavailableException(String message, @Nullable Throwable cause) {
        super(message, cause);
    }

    public StoreUnavailableException(String message) {
        super(message);
    }
}
