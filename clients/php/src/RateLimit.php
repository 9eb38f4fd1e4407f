<?php
declare(strict_types=1);

namespace Mailbolt;

/** The X-RateLimit-* headers of one answer; null when the answer had none. */
final class RateLimit
{
    public function __construct(
        public readonly ?int $limit,
        public readonly ?int $remaining,
        public readonly ?int $reset,
    ) {
    }

    /** @param array<string, string> $headers lower-case names */
    public static function fromHeaders(array $headers): self
    {
        $int = static fn (string $n): ?int => isset($headers[$n]) && is_numeric(trim($headers[$n])) ? (int) trim($headers[$n]) : null;
        return new self($int('x-ratelimit-limit'), $int('x-ratelimit-remaining'), $int('x-ratelimit-reset'));
    }
}
