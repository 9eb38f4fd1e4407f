package dev.mailbolt;

/**
 * The rate-limit headers of one answer ({@code X-RateLimit-Limit}, {@code -Remaining},
 * {@code -Reset}); a field is -1 when the header was absent.
 */
public final class RateLimit {
    private final long limit;
    private final long remaining;
    private final long reset;

    public RateLimit(long limit, long remaining, long reset) {
        this.limit = limit;
        this.remaining = remaining;
        this.reset = reset;
    }

    static RateLimit from(Headers h) {
        return new RateLimit(num(h.first("X-RateLimit-Limit")), num(h.first("X-RateLimit-Remaining")),
                num(h.first("X-RateLimit-Reset")));
    }

    private static long num(String v) {
        if (v == null) return -1;
        try {
            return Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** Requests allowed per second. */
    public long limit() { return limit; }

    /** Requests left in the current window. */
    public long remaining() { return remaining; }

    /** Unix time (seconds) when the current window ends. */
    public long reset() { return reset; }

    @Override
    public String toString() {
        return "RateLimit{limit=" + limit + ", remaining=" + remaining + ", reset=" + reset + "}";
    }
}
