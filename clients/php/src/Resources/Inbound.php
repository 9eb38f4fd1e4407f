<?php
declare(strict_types=1);

namespace Mailbolt\Resources;

use Mailbolt\Page;
use Mailbolt\Response;

/**
 * Inbound email (docs/inbound.md): domains the account receives mail for,
 * routes from their addresses to webhooks, and the raw messages received.
 */
final class Inbound extends Resource
{
    public const DOMAINS = '/v1/inbound/domains';
    public const ROUTES = '/v1/inbound/routes';

    /**
     * GET /v1/inbound/domains
     *
     * @param array<string, mixed> $params limit, cursor or page
     */
    public function listDomains(array $params = []): Page
    {
        return $this->page(self::DOMAINS, $params);
    }

    /**
     * POST /v1/inbound/domains: the answer names the MX and TXT records to publish.
     *
     * @param array{idempotency_key?: string} $options
     */
    public function createDomain(string $name, array $options = []): Response
    {
        return $this->call('POST', self::DOMAINS, [], ['name' => $name], $options);
    }

    /** GET /v1/inbound/domains/{id} */
    public function getDomain(string $id): Response
    {
        return $this->call('GET', self::DOMAINS . '/' . self::seg($id));
    }

    /**
     * DELETE /v1/inbound/domains/{id} (its routes go with it)
     *
     * @param array{idempotency_key?: string} $options
     */
    public function deleteDomain(string $id, array $options = []): Response
    {
        return $this->call('DELETE', self::DOMAINS . '/' . self::seg($id), [], null, $options);
    }

    /**
     * POST /v1/inbound/domains/{id}/verify: looks up the MX and the ownership TXT record.
     *
     * @param array{idempotency_key?: string} $options
     */
    public function verifyDomain(string $id, array $options = []): Response
    {
        return $this->call('POST', self::DOMAINS . '/' . self::seg($id) . '/verify', [], null, $options);
    }

    /**
     * GET /v1/inbound/routes
     *
     * @param array<string, mixed> $params limit, cursor or page
     */
    public function listRoutes(array $params = []): Page
    {
        return $this->page(self::ROUTES, $params);
    }

    /**
     * POST /v1/inbound/routes: $pattern is a local part such as "support", or "*".
     *
     * @param array{idempotency_key?: string} $options
     */
    public function createRoute(string $domainId, string $pattern, string $webhookId, array $options = []): Response
    {
        $body = ['domain_id' => $domainId, 'pattern' => $pattern, 'webhook_id' => $webhookId];
        return $this->call('POST', self::ROUTES, [], $body, $options);
    }

    /** GET /v1/inbound/routes/{id} */
    public function getRoute(string $id): Response
    {
        return $this->call('GET', self::ROUTES . '/' . self::seg($id));
    }

    /**
     * DELETE /v1/inbound/routes/{id}
     *
     * @param array{idempotency_key?: string} $options
     */
    public function deleteRoute(string $id, array $options = []): Response
    {
        return $this->call('DELETE', self::ROUTES . '/' . self::seg($id), [], null, $options);
    }

    /** GET /v1/inbound/messages/{id}/raw: the message exactly as received (message/rfc822), as a string of bytes. */
    public function raw(string $id): string
    {
        return $this->call('GET', '/v1/inbound/messages/' . self::seg($id) . '/raw')->body;
    }
}
