package dev.mailbolt;

import java.util.List;
import java.util.Map;

/**
 * One successful answer: its status, headers (rate limits, request id) and the decoded JSON
 * body ({@link #data()}: a {@code Map}, a {@code List}, or null for an empty body).
 */
public class ApiResponse {
    private final int status;
    private final Headers headers;
    private final Object body;

    public ApiResponse(int status, Headers headers, Object body) {
        this.status = status;
        this.headers = headers;
        this.body = body;
    }

    public int status() { return status; }

    public Headers headers() { return headers; }

    /** The decoded body as returned by {@link Json#parse(String)}; null when the answer had none. */
    public Object body() { return body; }

    /** The body as a JSON object (empty when the body was not one). */
    @SuppressWarnings("unchecked")
    public Map<String, Object> data() {
        return body instanceof Map ? (Map<String, Object>) body : Map.of();
    }

    /** A field of the body object. */
    public Object get(String field) {
        return data().get(field);
    }

    /** A field of the body object as a string, or null. */
    public String getString(String field) {
        Object v = data().get(field);
        return v == null ? null : v.toString();
    }

    /** The {@code data} array of a list answer (empty when absent). */
    @SuppressWarnings("unchecked")
    public List<Map<String, Object>> items() {
        Object d = data().get("data");
        return d instanceof List ? (List<Map<String, Object>>) d : List.of();
    }

    public RateLimit rateLimit() { return RateLimit.from(headers); }

    public String requestId() { return headers.first("X-Request-Id"); }

    /** True when the server replayed a stored answer for a repeated Idempotency-Key. */
    public boolean idempotentReplayed() {
        return "true".equalsIgnoreCase(headers.first("Idempotent-Replayed"));
    }

    @Override
    public String toString() {
        return status + " " + Json.write(body);
    }
}
