package io.stockade.proxy.admin;

import java.util.Objects;

import io.stockade.policy.StockadeConfig;
import io.stockade.proxy.problem.ProblemType;

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
        private final ProblemType kind;

        /**
         * @param kind {@link ProblemType#INVALID_POLICY_FILE} for an invalid file, {@link ProblemType#RESTART_REQUIRED}
         *             for a change that needs a restart, {@link ProblemType#BACKEND_UNAVAILABLE} when a backend
         *             cannot open
         */
        public Refused(ProblemType kind, String message) {
            super(message);
            this.kind = kind;
        }

        /** Why the reload was refused: every refusal is made with its reason. */
        @Override
        public String getMessage() {
            return Objects.requireNonNull(super.getMessage(), "a refusal is made with its reason");
        }

        public int status() {
            return kind.status();
        }

        public ProblemType kind() {
            return kind;
        }
    }
}
