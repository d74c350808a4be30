package io.stockade.policy.yaml;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

import io.stockade.policy.PolicyError;
import io.stockade.policy.PolicyException;

import org.yaml.snakeyaml.error.Mark;

/** The errors found so far in one file. */
final class Problems {
    private final Path file;
    private final List<PolicyError> errors = new ArrayList<>();

    Problems(Path file) {
        this.file = file;
    }

    /** Records an error at a snakeyaml mark (0-based line and column). */
    void add(Mark mark, String field, String message) {
        add(mark.getLine() + 1, mark.getColumn() + 1, field, message);
    }

    /** Records an error at a 1-based line and column. */
    void add(int line, int column, String field, String message) {
        errors.add(new PolicyError(file, line, column, field, message));
    }

    /** Throws every recorded error, sorted by position, if there is any. */
    void throwIfAny() throws PolicyException {
        if (!errors.isEmpty()) {
            errors.sort(Comparator.comparingInt(PolicyError::line).thenComparingInt(PolicyError::column));
            throw new PolicyException(errors);
        }
    }
}
