/**
 * What the SQL listener lets through, statement by statement: {@code Statements} and its {@code Lexer}.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.sql.statement;

import org.jspecify.annotations.NullMarked;
