package dev.mailbolt;

import java.util.Map;

/** Messages: send, batch, get, list, cancel. */
public final class Messages {
    private final MailboltClient c;

    Messages(MailboltClient c) {
        this.c = c;
    }

    /** Queues one message ({@code from}, {@code to}, {@code subject}, {@code html}/{@code text}, {@code send_at}, …). One Idempotency-Key is generated unless given, and reused on retries. */
    public ApiResponse send(Map<String, ?> message, RequestOptions... options) {
        return c.request("POST", "/v1/messages", message, RequestOptions.first(options));
    }

    /** Queues several messages at once, in one transaction. */
    public ApiResponse sendBatch(java.util.List<? extends Map<String, ?>> messages, RequestOptions... options) {
        return c.request("POST", "/v1/messages/batch", Map.of("messages", messages), RequestOptions.first(options));
    }

    /** A message with its state and content. */
    public ApiResponse get(String id) {
        return c.get("/v1/messages/" + MailboltClient.seg(id), null);
    }

    /**
     * The message's source (RFC 5322 bytes) as sent to one recipient, with the DKIM-Signature of
     * its latest attempt when it was signed. {@code recipient} may be null when the message has
     * exactly one recipient.
     */
    public byte[] raw(String id, String recipient) {
        Map<String, String> q = recipient == null ? Map.of() : Map.of("recipient", recipient);
        Object body = c.get("/v1/messages/" + MailboltClient.seg(id) + "/raw", q).body();
        return body instanceof byte[] ? (byte[]) body : new byte[0];
    }

    /** Cancels a queued or scheduled message. */
    public ApiResponse cancel(String id, RequestOptions... options) {
        return c.request("POST", "/v1/messages/" + MailboltClient.seg(id) + "/cancel", null, RequestOptions.first(options));
    }

    /** Lists messages, newest first: one page (cursor mode, or page mode when the query has {@code page}). */
    public Page list() {
        return list(null);
    }

    /** Lists messages, newest first: one page; query keys such as {@code limit}, {@code cursor}, {@code page}. */
    public Page list(Map<String, ?> query) {
        return c.page("/v1/messages", query);
    }

    /** Lists messages, newest first: every page, fetched as iterated (see {@link Pages#items()}). */
    public Pages listAll(Map<String, ?> query) {
        return c.pages("/v1/messages", query);
    }
}
