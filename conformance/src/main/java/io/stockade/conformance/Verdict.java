package io.stockade.conformance;

/** The outcome of one scenario. */
public enum Verdict {
    /** The proxied run broke no rule, a fault really exposed a stale write, and the control caught one. */
    PASS,
    /** The proxied run broke a rule: a stale write landed, an acknowledged write was lost... */
    FAIL,
    /** Nothing was proven: no handoff, no effective fault, or the control saw no stale write land. */
    INCONCLUSIVE,
    /** Not applicable to this target (e.g. proxy-restart when the suite does not launch the proxy). */
    SKIPPED
}
