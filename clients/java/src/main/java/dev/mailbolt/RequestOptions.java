package dev.mailbolt;

/** Per-call options of a write: the Idempotency-Key to send (else one is generated per call). */
public final class RequestOptions {
    private final String idempotencyKey;

    private RequestOptions(String idempotencyKey) {
        this.idempotencyKey = idempotencyKey;
    }

    public static RequestOptions idempotencyKey(String key) {
        if (key == null || key.isEmpty()) throw new IllegalArgumentException("an Idempotency-Key is 1 to 255 printable characters");
        return new RequestOptions(key);
    }

    public String idempotencyKey() {
        return idempotencyKey;
    }

    static RequestOptions first(RequestOptions[] opts) {
        return opts == null || opts.length == 0 ? null : opts[0];
    }
}
