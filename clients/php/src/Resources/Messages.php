<?php
declare(strict_types=1);

namespace Mailbolt\Resources;

use Mailbolt\Response;

final class Messages extends Resource
{
    use Listable;

    public const PATH = '/v1/messages';

    /**
     * POST /v1/messages. One Idempotency-Key (generated, or $options['idempotency_key'])
     * is sent with every attempt, so a retried send never sends twice.
     *
     * @param array<string, mixed> $message from, to, subject, html, text, send_at, template_id, …
     * @param array{idempotency_key?: string} $options
     */
    public function send(array $message, array $options = []): Response
    {
        return $this->call('POST', self::PATH, [], $message, $options);
    }

    /**
     * POST /v1/messages/batch, with one Idempotency-Key for all its attempts.
     *
     * @param list<array<string, mixed>> $messages
     * @param array{idempotency_key?: string} $options
     */
    public function sendBatch(array $messages, array $options = []): Response
    {
        return $this->call('POST', self::PATH . '/batch', [], ['messages' => array_values($messages)], $options);
    }

    /** GET /v1/messages/{id} */
    public function get(string $id): Response
    {
        return $this->call('GET', self::PATH . '/' . self::seg($id));
    }

    /**
     * GET /v1/messages/{id}/raw: the message's source (RFC 5322 bytes) as sent
     * to one recipient, with the DKIM-Signature of its latest attempt when it
     * was signed. $recipient may be null when the message has exactly one.
     */
    public function raw(string $id, ?string $recipient = null): string
    {
        return $this->call('GET', self::PATH . '/' . self::seg($id) . '/raw', ['recipient' => $recipient])->body;
    }

    /**
     * POST /v1/messages/{id}/cancel: a queued or scheduled message.
     *
     * @param array{idempotency_key?: string} $options
     */
    public function cancel(string $id, array $options = []): Response
    {
        return $this->call('POST', self::PATH . '/' . self::seg($id) . '/cancel', [], null, $options);
    }
}
