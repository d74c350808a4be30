package io.stockade.policy;

/** Sizes as a policy file writes them. */
public final class Sizes {
    private Sizes() {
    }

    /** A size as a policy file would write it: {@code 16KiB}, {@code 300}. */
    public static String text(long bytes) {
        for (String[] unit : new String[][] {{"GiB", "30"}, {"MiB", "20"}, {"KiB", "10"}}) {
            long scale = 1L << Integer.parseInt(unit[1]);
            if (bytes % scale == 0) {
                return bytes / scale + unit[0];
            }
        }
        return Long.toString(bytes);
    }
}
