<?php
declare(strict_types=1);

namespace Mailbolt\Resources;

use Mailbolt\Response;

final class ApiKeys extends Resource
{
    use Listable;

    public const PATH = '/v1/api-keys';

    /**
     * POST /v1/api-keys. The answer's `key` is shown this once.
     *
     * @param array<string, mixed> $key name, scopes, mode, expires_at
     * @param array{idempotency_key?: string} $options
     */
    public function create(array $key, array $options = []): Response
    {
        return $this->call('POST', self::PATH, [], $key, $options);
    }

    /** GET /v1/api-keys/{id} */
    public function get(string $id): Response
    {
        return $this->call('GET', self::PATH . '/' . self::seg($id));
    }

    /**
     * DELETE /v1/api-keys/{id}
     *
     * @param array{idempotency_key?: string} $options
     */
    public function revoke(string $id, array $options = []): Response
    {
        return $this->call('DELETE', self::PATH . '/' . self::seg($id), [], null, $options);
    }
}
