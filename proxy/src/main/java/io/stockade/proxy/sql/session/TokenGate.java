package io.stockade.proxy.sql.session;

import java.util.List;

import io.stockade.proxy.sql.statement.Statements;
import io.stockade.proxy.verify.TokenVerifier;

import org.jspecify.annotations.Nullable;

/**
 * Judges a token a client set before the database sees it: well-formed, and genuine for every policy with
 * {@code fence.verify} (asked about the policy's {@code lock}: a session's token is one lock's, not a row's). A
 * taken token leaves with its proof ({@link Proofs}); {@code max-advance} and staleness are judged by the database,
 * where the highest tokens are.
 */
public final class TokenGate {
    /** The verifier of one policy. */
    public record Check(String policy, String lock, TokenVerifier verifier) {
    }

    private final List<Check> checks;
    private final Proofs proofs;
    private final boolean sessionTokens;

    /**
     * @param sessionTokens whether a session's token is taken ({@code sql.session-tokens: allow}), or only a
     *                      transaction's
     */
    public TokenGate(List<Check> checks, Proofs proofs, boolean sessionTokens) {
        this.checks = List.copyOf(checks);
        this.proofs = proofs;
        this.sessionTokens = sessionTokens;
    }

    /**
     * Judges {@code text} as a token.
     *
     * @param text    the token's text
     * @param session the server session ({@code pid:start}) a session's token is bound to (null when the session
     *                query answered none); ignored when local
     */
    Verdict judge(String text, boolean local, @Nullable String session) {
        if (!local && !sessionTokens) {
            return new Verdict.Refused(Statements.REFUSED, "stockade: a session's fencing token (startup options,"
                    + " SET, set_config(..., false)) is refused here (sql.session-tokens: refuse): a transaction"
                    + " pooler shares this session among clients; SET LOCAL stockade.fencing_token in each"
                    + " transaction");
        }
        if (!Statements.validToken(text)) {
            return new Verdict.Refused(Statements.MALFORMED, "stockade: malformed fencing token '"
                    + (text.length() > 40 ? text.substring(0, 40) + "..." : text) + "': decimal digits"
                    + " 0..9223372036854775807, no sign, no leading zeros");
        }
        long token = Long.parseLong(text);
        for (Check check : checks) {
            TokenVerifier.Verdict verdict = check.verifier().verify(new TokenVerifier.Claim(check.lock(), token,
                    header -> List.of()));
            switch (verdict) {
                case TokenVerifier.Genuine g -> {
                    // genuine for this policy: ask the next
                }
                case TokenVerifier.Refused r -> {
                    return new Verdict.Refused("SF403", "stockade: fencing token " + token + " is not genuine for"
                            + " lock '" + check.lock() + "' (policy " + check.policy() + ", " + check.verifier().kind()
                            + " verifier): " + r.reason());
                }
                case TokenVerifier.Unavailable u -> {
                    return new Verdict.Refused("SF503", "stockade: fencing token " + token + " could not be checked"
                            + " (policy " + check.policy() + ", " + check.verifier().kind() + " verifier): "
                            + u.reason() + "; try again");
                }
            }
        }
        return new Verdict.Taken(token, local ? proofs.local(token) : proofs.session(token, session));
    }
}
