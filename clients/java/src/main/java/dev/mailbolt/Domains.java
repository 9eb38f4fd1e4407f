package dev.mailbolt;

import java.util.Map;

/** Sending domains. */
public final class Domains {
    private final MailboltClient c;

    Domains(MailboltClient c) {
        this.c = c;
    }

    /** Lists domains: one page (cursor mode, or page mode when the query has {@code page}). */
    public Page list() {
        return list(null);
    }

    /** Lists domains: one page; query keys such as {@code limit}, {@code cursor}, {@code page}. */
    public Page list(Map<String, ?> query) {
        return c.page("/v1/domains", query);
    }

    /** Lists domains: every page, fetched as iterated (see {@link Pages#items()}). */
    public Pages listAll(Map<String, ?> query) {
        return c.pages("/v1/domains", query);
    }

    /** Adds a sending domain ({@code name}, {@code dkim_algorithm}). */
    public ApiResponse create(Map<String, ?> params, RequestOptions... options) {
        return c.request("POST", "/v1/domains", params, RequestOptions.first(options));
    }

    /** One domain with its DNS records. */
    public ApiResponse get(String id) {
        return c.get("/v1/domains/" + MailboltClient.seg(id), null);
    }

    /** Deletes a domain. */
    public ApiResponse delete(String id, RequestOptions... options) {
        return c.request("DELETE", "/v1/domains/" + MailboltClient.seg(id), null, RequestOptions.first(options));
    }

    /** Checks the domain's DNS records now. */
    public ApiResponse verify(String id, RequestOptions... options) {
        return c.request("POST", "/v1/domains/" + MailboltClient.seg(id) + "/verify", null, RequestOptions.first(options));
    }

    /** Rotates the DKIM key (params may be null or hold {@code dkim_algorithm}). */
    public ApiResponse rotateDkim(String id, Map<String, ?> params, RequestOptions... options) {
        return c.request("POST", "/v1/domains/" + MailboltClient.seg(id) + "/dkim/rotate", MailboltClient.orEmpty(params), RequestOptions.first(options));
    }
}
