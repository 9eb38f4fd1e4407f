package dev.mailbolt;

import java.util.Map;

/** Stored Mustache templates and their versions. */
public final class Templates {
    private final MailboltClient c;

    Templates(MailboltClient c) {
        this.c = c;
    }

    /** Lists templates: one page (cursor mode, or page mode when the query has {@code page}). */
    public Page list() {
        return list(null);
    }

    /** Lists templates: one page; query keys such as {@code limit}, {@code cursor}, {@code page}. */
    public Page list(Map<String, ?> query) {
        return c.page("/v1/templates", query);
    }

    /** Lists templates: every page, fetched as iterated (see {@link Pages#items()}). */
    public Pages listAll(Map<String, ?> query) {
        return c.pages("/v1/templates", query);
    }

    /** Creates a template ({@code name}, {@code subject}, {@code html}, {@code text}, {@code strict}). */
    public ApiResponse create(Map<String, ?> params, RequestOptions... options) {
        return c.request("POST", "/v1/templates", params, RequestOptions.first(options));
    }

    /** The newest version of a template. */
    public ApiResponse get(String id) {
        return get(id, 0);
    }

    /** One version of a template (0: the newest). */
    public ApiResponse get(String id, int version) {
        return c.get("/v1/templates/" + MailboltClient.seg(id), version > 0 ? Map.of("version", version) : null);
    }

    /** Updates a template, making a new version. */
    public ApiResponse update(String id, Map<String, ?> params, RequestOptions... options) {
        return c.request("PUT", "/v1/templates/" + MailboltClient.seg(id), params, RequestOptions.first(options));
    }

    /** Renders a template with {@code data} (and an optional {@code version}). */
    public ApiResponse render(String id, Map<String, ?> params, RequestOptions... options) {
        return c.request("POST", "/v1/templates/" + MailboltClient.seg(id) + "/render", MailboltClient.orEmpty(params), RequestOptions.first(options));
    }

    /** Lists a template's versions, newest first: one page (cursor mode, or page mode when the query has {@code page}). */
    public Page listVersions(String id) {
        return listVersions(id, null);
    }

    /** Lists a template's versions, newest first: one page; query keys such as {@code limit}, {@code cursor}, {@code page}. */
    public Page listVersions(String id, Map<String, ?> query) {
        return c.page("/v1/templates/" + MailboltClient.seg(id)+ "/versions", query);
    }

    /** Lists a template's versions, newest first: every page, fetched as iterated (see {@link Pages#items()}). */
    public Pages listVersionsAll(String id, Map<String, ?> query) {
        return c.pages("/v1/templates/" + MailboltClient.seg(id)+ "/versions", query);
    }
}
