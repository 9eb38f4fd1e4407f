package dev.mailbolt;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Inbound email (docs/inbound.md): domains the account receives mail for, routes from their
 * addresses to webhooks, and the raw messages received.
 */
public final class Inbound {
    private final MailboltClient c;

    Inbound(MailboltClient c) {
        this.c = c;
    }

    /** Lists inbound domains: one page; query keys such as {@code limit}, {@code cursor}, {@code page}. */
    public Page listDomains(Map<String, ?> query) {
        return c.page("/v1/inbound/domains", query);
    }

    /** Adds an inbound domain; the answer names the MX and TXT records to publish. */
    public ApiResponse createDomain(String name, RequestOptions... options) {
        return c.request("POST", "/v1/inbound/domains", Map.of("name", name), RequestOptions.first(options));
    }

    /** One inbound domain with its records. */
    public ApiResponse getDomain(String id) {
        return c.get("/v1/inbound/domains/" + MailboltClient.seg(id), null);
    }

    /** Deletes an inbound domain and its routes. */
    public ApiResponse deleteDomain(String id, RequestOptions... options) {
        return c.request("DELETE", "/v1/inbound/domains/" + MailboltClient.seg(id), null, RequestOptions.first(options));
    }

    /** Looks up the MX and the ownership TXT record now. */
    public ApiResponse verifyDomain(String id, RequestOptions... options) {
        return c.request("POST", "/v1/inbound/domains/" + MailboltClient.seg(id) + "/verify", null, RequestOptions.first(options));
    }

    /** Lists routes: one page; query keys such as {@code limit}, {@code cursor}, {@code page}. */
    public Page listRoutes(Map<String, ?> query) {
        return c.page("/v1/inbound/routes", query);
    }

    /** Adds a route: {@code pattern} is a local part such as {@code support}, or {@code *}. */
    public ApiResponse createRoute(String domainId, String pattern, String webhookId, RequestOptions... options) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("domain_id", domainId);
        body.put("pattern", pattern);
        body.put("webhook_id", webhookId);
        return c.request("POST", "/v1/inbound/routes", body, RequestOptions.first(options));
    }

    /** One route. */
    public ApiResponse getRoute(String id) {
        return c.get("/v1/inbound/routes/" + MailboltClient.seg(id), null);
    }

    /** Deletes a route. */
    public ApiResponse deleteRoute(String id, RequestOptions... options) {
        return c.request("DELETE", "/v1/inbound/routes/" + MailboltClient.seg(id), null, RequestOptions.first(options));
    }

    /** The message exactly as received ({@code message/rfc822}), as bytes. */
    public byte[] raw(String id) {
        Object body = c.get("/v1/inbound/messages/" + MailboltClient.seg(id) + "/raw", null).body();
        return body instanceof byte[] ? (byte[]) body : new byte[0];
    }
}
