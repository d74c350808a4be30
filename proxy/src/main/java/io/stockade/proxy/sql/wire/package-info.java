/**
 * The PostgreSQL wire protocol as the SQL listener reads and writes it: framing ({@code MessageReader}), the
 * messages it builds and parses ({@code Messages}), and a message's body ({@code Body}).
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.sql.wire;

import org.jspecify.annotations.NullMarked;
