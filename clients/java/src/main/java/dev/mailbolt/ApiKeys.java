package dev.mailbolt;

import java.util.Map;

/** API keys of the account. */
public final class ApiKeys {
    private final MailboltClient c;

    ApiKeys(MailboltClient c) {
        this.c = c;
    }

    /** Lists API keys: one page (cursor mode, or page mode when the query has {@code page}). */
    public Page list() {
        return list(null);
    }

    /** Lists API keys: one page; query keys such as {@code limit}, {@code cursor}, {@code page}. */
    public Page list(Map<String, ?> query) {
        return c.page("/v1/api-keys", query);
    }

    /** Lists API keys: every page, fetched as iterated (see {@link Pages#items()}). */
    public Pages listAll(Map<String, ?> query) {
        return c.pages("/v1/api-keys", query);
    }

    /** Creates a key ({@code name}, {@code scopes}, {@code mode}); the answer holds the secret {@code key} once. */
    public ApiResponse create(Map<String, ?> params, RequestOptions... options) {
        return c.request("POST", "/v1/api-keys", params, RequestOptions.first(options));
    }

    /** One key. */
    public ApiResponse get(String id) {
        return c.get("/v1/api-keys/" + MailboltClient.seg(id), null);
    }

    /** Revokes a key. */
    public ApiResponse revoke(String id, RequestOptions... options) {
        return c.request("DELETE", "/v1/api-keys/" + MailboltClient.seg(id), null, RequestOptions.first(options));
    }
}
