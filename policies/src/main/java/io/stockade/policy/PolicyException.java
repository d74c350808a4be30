package io.stockade.policy;

import java.util.List;
import java.util.stream.Collectors;

/** A policy file that cannot be used, with every problem found in it. */
public final class PolicyException extends Exception {
    private final List<PolicyError> errors;

    public PolicyException(List<PolicyError> errors) {
        super(errors.stream().map(PolicyError::toString).collect(Collectors.joining("\n")));
        if (errors.isEmpty()) {
            throw new IllegalArgumentException("a PolicyException needs at least one error");
        }
        this.errors = List.copyOf(errors);
    }

    /** The problems, in file order. */
    public List<PolicyError> errors() {
        return errors;
    }
}
