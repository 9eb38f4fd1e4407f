<?php
declare(strict_types=1);

namespace Mailbolt\Resources;

use Mailbolt\Page;
use Mailbolt\Response;

/** The webhook subscriptions. To check a request the service sent, see Mailbolt\Webhook. */
final class Webhooks extends Resource
{
    use Listable;

    public const PATH = '/v1/webhooks';

    /**
     * POST /v1/webhooks. The answer carries the signing `secret`.
     *
     * @param array<string, mixed> $webhook url, events, description
     * @param array{idempotency_key?: string} $options
     */
    public function create(array $webhook, array $options = []): Response
    {
        return $this->call('POST', self::PATH, [], $webhook, $options);
    }

    /** GET /v1/webhooks/{id} */
    public function get(string $id): Response
    {
        return $this->call('GET', self::PATH . '/' . self::seg($id));
    }

    /**
     * DELETE /v1/webhooks/{id}
     *
     * @param array{idempotency_key?: string} $options
     */
    public function delete(string $id, array $options = []): Response
    {
        return $this->call('DELETE', self::PATH . '/' . self::seg($id), [], null, $options);
    }

    /**
     * PATCH /v1/webhooks/{id}: any of url, events, description, enabled; the
     * others and the secret are kept.
     *
     * @param array<string, mixed> $changes
     * @param array{idempotency_key?: string} $options
     */
    public function update(string $id, array $changes, array $options = []): Response
    {
        return $this->call('PATCH', self::PATH . '/' . self::seg($id), [], $changes === [] ? new \stdClass() : $changes, $options);
    }

    /**
     * POST /v1/webhooks/{id}/test: sends a signed webhook.test event now; the
     * answer has the receiver's status_code, latency_ms and response (its
     * first 1 KB), or error when it could not be reached.
     *
     * @param array{idempotency_key?: string} $options
     */
    public function test(string $id, array $options = []): Response
    {
        return $this->call('POST', self::PATH . '/' . self::seg($id) . '/test', [], new \stdClass(), $options);
    }

    /**
     * POST /v1/webhooks/{id}/rotate-secret: a new secret; the previous one stays valid for a while.
     *
     * @param array{idempotency_key?: string} $options
     */
    public function rotateSecret(string $id, array $options = []): Response
    {
        return $this->call('POST', self::PATH . '/' . self::seg($id) . '/rotate-secret', [], new \stdClass(), $options);
    }

    /**
     * GET /v1/webhooks/{id}/deliveries, one page.
     *
     * @param array<string, mixed> $params status, limit, page or cursor
     */
    public function listDeliveries(string $id, array $params = []): Page
    {
        return $this->page(self::PATH . '/' . self::seg($id) . '/deliveries', $params);
    }

    /**
     * Every delivery of a webhook, across all pages.
     *
     * @param array<string, mixed> $params
     * @return \Generator<int, array<string, mixed>>
     */
    public function allDeliveries(string $id, array $params = []): \Generator
    {
        return $this->walkItems(self::PATH . '/' . self::seg($id) . '/deliveries', $params);
    }

    /**
     * POST /v1/webhooks/{webhook_id}/events/{event_id}/replay: a failed event, again.
     *
     * @param array{idempotency_key?: string} $options
     */
    public function replayEvent(string $webhookId, string $eventId, array $options = []): Response
    {
        return $this->call('POST', self::PATH . '/' . self::seg($webhookId) . '/events/' . self::seg($eventId) . '/replay', [], new \stdClass(), $options);
    }
}
