package dev.mailbolt;

import java.util.Map;

/** The deliverability grader. */
public final class Grader {
    private final MailboltClient c;

    Grader(MailboltClient c) {
        this.c = c;
    }

    /** Public domain-only check ({@code domain}, {@code selectors}); needs no key. */
    public ApiResponse check(Map<String, ?> params) {
        return c.request("POST", "/v1/grader/check", params, null);
    }

    /** Full email analysis, stored under the tenant (scope grader:write). */
    public ApiResponse submit(Map<String, ?> params, RequestOptions... options) {
        return c.request("POST", "/v1/grader/submit", params, RequestOptions.first(options));
    }

    /** A stored result (scope grader:read). */
    public ApiResponse result(String id) {
        return c.get("/v1/grader/results/" + MailboltClient.seg(id), null);
    }

    /** Recent results; query keys {@code page}, {@code per_page} (1 to 100). */
    public ApiResponse history(Map<String, ?> query) {
        return c.get("/v1/grader/history", query);
    }

    /** Recent results, first page. */
    public ApiResponse history() {
        return history(null);
    }
}
