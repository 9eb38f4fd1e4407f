package dev.mailbolt;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** The suppression list, addressed by recipient. */
public final class Suppressions {
    private final MailboltClient c;

    Suppressions(MailboltClient c) {
        this.c = c;
    }

    /** Lists suppressions by recipient: one page (cursor mode, or page mode when the query has {@code page}). */
    public Page list() {
        return list(null);
    }

    /** Lists suppressions by recipient: one page; query keys such as {@code limit}, {@code cursor}, {@code page}. */
    public Page list(Map<String, ?> query) {
        return c.page("/v1/suppressions", query);
    }

    /** Lists suppressions by recipient: every page, fetched as iterated (see {@link Pages#items()}). */
    public Pages listAll(Map<String, ?> query) {
        return c.pages("/v1/suppressions", query);
    }

    /** Suppresses a recipient ({@code recipient}, {@code reason}). */
    public ApiResponse add(Map<String, ?> params, RequestOptions... options) {
        return c.request("POST", "/v1/suppressions", params, RequestOptions.first(options));
    }

    /** Suppresses a recipient with reason {@code manual}. */
    public ApiResponse add(String recipient, RequestOptions... options) {
        return add(Map.of("recipient", recipient), options);
    }

    /**
     * Adds up to 10,000 suppressions at once, all or nothing: a bad one throws (400, {@code details.index})
     * and none is added. Each item has {@code recipient} and optionally {@code reason} and {@code stream};
     * the answer has {@code added} and {@code already_present}.
     */
    public ApiResponse importSuppressions(List<? extends Map<String, ?>> suppressions, RequestOptions... options) {
        return c.request("POST", "/v1/suppressions/import", Map.of("suppressions", suppressions), RequestOptions.first(options));
    }

    /** The whole list as CSV text ({@code recipient,reason,stream}), the format the import takes. */
    public String export() {
        return export(null);
    }

    /** The entries that name {@code stream} ({@code transactional} or {@code broadcast}; null: all) as CSV text. */
    public String export(String stream, RequestOptions... options) {
        Map<String, Object> q = new HashMap<>();
        q.put("stream", stream);
        return c.requestText("/v1/suppressions/export" + MailboltClient.query(q), RequestOptions.first(options));
    }

    /** Removes a suppression: every entry of the recipient. */
    public ApiResponse delete(String recipient, RequestOptions... options) {
        return c.request("DELETE", "/v1/suppressions/" + MailboltClient.seg(recipient), null, RequestOptions.first(options));
    }

    /** Removes only the recipient's entry for one stream, {@code transactional} or {@code broadcast}. */
    public ApiResponse deleteFromStream(String recipient, String stream, RequestOptions... options) {
        Map<String, Object> q = new HashMap<>();
        q.put("stream", stream);
        return c.request("DELETE", "/v1/suppressions/" + MailboltClient.seg(recipient) + MailboltClient.query(q),
                null, RequestOptions.first(options));
    }
}
