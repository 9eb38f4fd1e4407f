<?php
declare(strict_types=1);

namespace Mailbolt\Resources;

use Mailbolt\Response;

final class Suppressions extends Resource
{
    use Listable;

    public const PATH = '/v1/suppressions';

    /**
     * POST /v1/suppressions
     *
     * @param string|array<string, mixed> $suppression a recipient address, or {recipient, reason}
     * @param array{idempotency_key?: string} $options
     */
    public function add(string|array $suppression, array $options = []): Response
    {
        if (is_string($suppression)) {
            $suppression = ['recipient' => $suppression];
        }
        return $this->call('POST', self::PATH, [], $suppression, $options);
    }

    /**
     * DELETE /v1/suppressions/{recipient}
     *
     * @param array{idempotency_key?: string} $options
     */
    public function delete(string $recipient, array $options = []): Response
    {
        return $this->call('DELETE', self::PATH . '/' . self::seg($recipient), [], null, $options);
    }
}
