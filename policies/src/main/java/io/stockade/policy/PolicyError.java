package io.stockade.policy;

import java.nio.file.Path;

/**
 * One problem in a policy file.
 *
 * @param file    the file (or the source name given to {@link io.stockade.policy.yaml.PolicyLoader#parse})
 * @param line    1-based line
 * @param column  1-based column
 * @param field   where in the document, e.g. {@code policies[0].backend.url}; {@code (root)} for the document
 *                itself, {@code (yaml)} for a syntax error, {@code (file)} when the file cannot be read
 * @param message what is wrong, naming the valid values where there is a fixed set
 */
public record PolicyError(Path file, int line, int column, String field, String message) {

    /** {@code file:line:column: field: message}, the form editors and terminals turn into links. */
    @Override
    public String toString() {
        return file + ":" + line + ":" + column + ": " + field + ": " + message;
    }
}
