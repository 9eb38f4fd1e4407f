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

    /**
     * DELETE /v1/suppressions/{recipient}?stream=: only the recipient's entry
     * for one stream (transactional or broadcast).
     *
     * @param array<string, mixed> $options
     */
    public function deleteFromStream(string $recipient, string $stream, array $options = []): Response
    {
        return $this->call('DELETE', self::PATH . '/' . self::seg($recipient), ['stream' => $stream], null, $options);
    }

    /**
     * POST /v1/suppressions/import: up to 10,000 at once, all or nothing (a bad
     * row throws, with details['index'], and none is added). The answer has
     * 'added' and 'already_present'.
     *
     * @param list<array<string, mixed>> $suppressions each {recipient, reason?, stream?}
     * @param array{idempotency_key?: string} $options
     */
    public function import(array $suppressions, array $options = []): Response
    {
        return $this->call('POST', self::PATH . '/import', [], ['suppressions' => array_values($suppressions)], $options);
    }

    /**
     * GET /v1/suppressions/export: the whole list as CSV text
     * (recipient,reason,stream), the format import takes; $stream keeps the
     * entries that name that stream.
     */
    public function export(?string $stream = null): string
    {
        return $this->call('GET', self::PATH . '/export', ['stream' => $stream])->body;
    }
}
