<?php
declare(strict_types=1);

namespace Mailbolt\Resources;

use Mailbolt\Response;

final class Domains extends Resource
{
    use Listable;

    public const PATH = '/v1/domains';

    /**
     * POST /v1/domains
     *
     * @param string|array<string, mixed> $domain a name, or {name, dkim_algorithm}
     * @param array{idempotency_key?: string} $options
     */
    public function create(string|array $domain, array $options = []): Response
    {
        if (is_string($domain)) {
            $domain = ['name' => $domain];
        }
        return $this->call('POST', self::PATH, [], $domain, $options);
    }

    /** GET /v1/domains/{id} */
    public function get(string $id): Response
    {
        return $this->call('GET', self::PATH . '/' . self::seg($id));
    }

    /**
     * DELETE /v1/domains/{id}
     *
     * @param array{idempotency_key?: string} $options
     */
    public function delete(string $id, array $options = []): Response
    {
        return $this->call('DELETE', self::PATH . '/' . self::seg($id), [], null, $options);
    }

    /**
     * POST /v1/domains/{id}/verify: checks the domain's DNS records.
     *
     * @param array{idempotency_key?: string} $options
     */
    public function verify(string $id, array $options = []): Response
    {
        return $this->call('POST', self::PATH . '/' . self::seg($id) . '/verify', [], null, $options);
    }

    /**
     * POST /v1/domains/{id}/dkim/rotate
     *
     * @param array<string, mixed> $params dkim_algorithm (optional)
     * @param array{idempotency_key?: string} $options
     */
    public function rotateDkim(string $id, array $params = [], array $options = []): Response
    {
        return $this->call('POST', self::PATH . '/' . self::seg($id) . '/dkim/rotate', [], (object) $params, $options);
    }
}
