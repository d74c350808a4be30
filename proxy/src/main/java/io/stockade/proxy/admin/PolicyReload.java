package io.stockade.proxy.admin;

import io.stockade.policy.StockadeConfig;

/**
 * What the admin API's policy endpoints need of the server: the policies in force, and a reload of the file they
 * came from. The server implements it ({@code io.stockade.proxy.Reloader}); the admin package names only this, so
 * the dependency runs one way, server to admin.
 */
public interface PolicyReload {

    /** The policies in force. */
    StockadeConfig config();

    /**
     * Loads the file the policies in force came from, and puts it in force.
     *
     * @return a one-line summary of what changed
     * @throws Refused when the file is invalid, changes what only a restart can change, or a backend cannot open;
     *                 the policies in force stay
     */
    String reload() throws Refused;

    /** A reload that was refused; nothing changed. */
    final class Refused extends Exception {
        private final int status;

        public Refused(int status, String message) {
            super(message);
            this.status = status;
        }

        /** 422 for an invalid file, 409 for a change that needs a restart, 503 when a backend cannot open. */
        public int status() {
            return status;
        }
    }
}
