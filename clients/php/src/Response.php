<?php
declare(strict_types=1);

namespace Mailbolt;

/**
 * One answer of the API: the decoded JSON body, readable as an array
 * ($response['id']), plus the status, the headers, the request id and the
 * rate-limit headers.
 *
 * @implements \ArrayAccess<string|int, mixed>
 * @implements \IteratorAggregate<string|int, mixed>
 */
class Response implements \ArrayAccess, \IteratorAggregate, \Countable, \JsonSerializable
{
    public readonly RateLimit $rateLimit;
    public readonly ?string $requestId;

    /**
     * @param array<string, string> $headers lower-case names
     * @param mixed $data the decoded JSON body (null when empty)
     */
    public function __construct(
        public readonly int $status,
        public readonly array $headers,
        public readonly string $body,
        public readonly mixed $data,
        public readonly ?string $idempotencyKey = null,
    ) {
        $this->rateLimit = RateLimit::fromHeaders($headers);
        $this->requestId = $headers['x-request-id'] ?? null;
    }

    /** A header's value (case-insensitive name), null when absent. */
    public function header(string $name): ?string
    {
        return $this->headers[strtolower($name)] ?? null;
    }

    /** Whether the server replayed a stored answer for this Idempotency-Key. */
    public function isReplay(): bool
    {
        return strtolower((string) $this->header('Idempotent-Replayed')) === 'true';
    }

    /** @return array<string|int, mixed> */
    public function toArray(): array
    {
        return is_array($this->data) ? $this->data : [];
    }

    public function offsetExists(mixed $offset): bool
    {
        return is_array($this->data) && array_key_exists($offset, $this->data);
    }

    public function offsetGet(mixed $offset): mixed
    {
        return is_array($this->data) ? ($this->data[$offset] ?? null) : null;
    }

    public function offsetSet(mixed $offset, mixed $value): void
    {
        throw new \LogicException('a Mailbolt response is read-only');
    }

    public function offsetUnset(mixed $offset): void
    {
        throw new \LogicException('a Mailbolt response is read-only');
    }

    public function getIterator(): \Iterator
    {
        return new \ArrayIterator($this->toArray());
    }

    public function count(): int
    {
        return count($this->toArray());
    }

    public function jsonSerialize(): mixed
    {
        return $this->data;
    }
}
