package dev.mailbolt;

import java.util.Map;

/** Webhook endpoints, their deliveries and replay. (Signature checks: {@link WebhookVerifier}.) */
public final class Webhooks {
    private final MailboltClient c;

    Webhooks(MailboltClient c) {
        this.c = c;
    }

    /** Lists webhooks: one page (cursor mode, or page mode when the query has {@code page}). */
    public Page list() {
        return list(null);
    }

    /** Lists webhooks: one page; query keys such as {@code limit}, {@code cursor}, {@code page}. */
    public Page list(Map<String, ?> query) {
        return c.page("/v1/webhooks", query);
    }

    /** Lists webhooks: every page, fetched as iterated (see {@link Pages#items()}). */
    public Pages listAll(Map<String, ?> query) {
        return c.pages("/v1/webhooks", query);
    }

    /** Creates a webhook ({@code url}, {@code events}, {@code description}); the answer holds its {@code secret} once. */
    public ApiResponse create(Map<String, ?> params, RequestOptions... options) {
        return c.request("POST", "/v1/webhooks", params, RequestOptions.first(options));
    }

    /** One webhook. */
    public ApiResponse get(String id) {
        return c.get("/v1/webhooks/" + MailboltClient.seg(id), null);
    }

    /** Deletes a webhook. */
    public ApiResponse delete(String id, RequestOptions... options) {
        return c.request("DELETE", "/v1/webhooks/" + MailboltClient.seg(id), null, RequestOptions.first(options));
    }

    /** Changes any of {@code url}, {@code events}, {@code description}, {@code enabled}; the others and the secret are kept. */
    public ApiResponse update(String id, Map<String, ?> changes, RequestOptions... options) {
        return c.request("PATCH", "/v1/webhooks/" + MailboltClient.seg(id), changes, RequestOptions.first(options));
    }

    /**
     * Sends a signed {@code webhook.test} event now; the answer has the receiver's
     * {@code status_code}, {@code latency_ms} and {@code response} (its first 1 KB), or
     * {@code error} when it could not be reached.
     */
    public ApiResponse test(String id, RequestOptions... options) {
        return c.request("POST", "/v1/webhooks/" + MailboltClient.seg(id) + "/test", Map.of(), RequestOptions.first(options));
    }

    /** Rotates the signing secret; the previous one stays valid for a while. */
    public ApiResponse rotateSecret(String id, RequestOptions... options) {
        return c.request("POST", "/v1/webhooks/" + MailboltClient.seg(id) + "/rotate-secret", Map.of(), RequestOptions.first(options));
    }

    /** Queues a failed event for redelivery (202). */
    public ApiResponse replayEvent(String webhookId, String eventId, RequestOptions... options) {
        return c.request("POST", "/v1/webhooks/" + MailboltClient.seg(webhookId) + "/events/" + MailboltClient.seg(eventId) + "/replay", Map.of(), RequestOptions.first(options));
    }

    /** Lists a webhook's deliveries: one page (cursor mode, or page mode when the query has {@code page}). */
    public Page listDeliveries(String id) {
        return listDeliveries(id, null);
    }

    /** Lists a webhook's deliveries: one page; query keys such as {@code limit}, {@code cursor}, {@code page}. */
    public Page listDeliveries(String id, Map<String, ?> query) {
        return c.page("/v1/webhooks/" + MailboltClient.seg(id) + "/deliveries", query);
    }

    /** Lists a webhook's deliveries: every page, fetched as iterated (see {@link Pages#items()}). */
    public Pages listDeliveriesAll(String id, Map<String, ?> query) {
        return c.pages("/v1/webhooks/" + MailboltClient.seg(id) + "/deliveries", query);
    }
}
