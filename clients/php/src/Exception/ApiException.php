<?php
declare(strict_types=1);

namespace Mailbolt\Exception;

use Mailbolt\RateLimit;

/**
 * An error answer of the API (spec §7): the HTTP status, the error code (the
 * programmatic contract: match on it, not on the message), the message, the
 * details and the request id of the X-Request-Id header. getCode() is the status.
 */
class ApiException extends MailboltException
{
    public readonly RateLimit $rateLimit;

    /**
     * @param array<string, mixed> $details
     * @param array<string, string> $headers lower-case names
     */
    public function __construct(
        public readonly int $status,
        public readonly string $errorCode,
        string $message,
        public readonly array $details = [],
        public readonly ?string $requestId = null,
        public readonly array $headers = [],
        public readonly string $body = '',
    ) {
        parent::__construct($message, $status);
        $this->rateLimit = RateLimit::fromHeaders($headers);
    }

    public function getStatus(): int
    {
        return $this->status;
    }

    public function getErrorCode(): string
    {
        return $this->errorCode;
    }

    /** @return array<string, mixed> */
    public function getDetails(): array
    {
        return $this->details;
    }

    public function getRequestId(): ?string
    {
        return $this->requestId;
    }

    /** The Retry-After header in seconds, null when absent. */
    public function getRetryAfter(): ?float
    {
        $v = trim($this->headers['retry-after'] ?? '');
        if ($v === '') {
            return null;
        }
        if (is_numeric($v)) {
            return max(0.0, (float) $v);
        }
        $t = strtotime($v);
        return $t === false ? null : max(0.0, (float) ($t - time()));
    }

    /**
     * The exception class for an answer's status.
     *
     * @param array<string, mixed> $details
     * @param array<string, string> $headers
     */
    public static function create(int $status, string $code, string $message, array $details, ?string $requestId, array $headers, string $body): self
    {
        $class = match (true) {
            $status === 400 => ValidationException::class,
            $status === 401 => AuthenticationException::class,
            $status === 403 => PermissionException::class,
            $status === 404 => NotFoundException::class,
            $status === 409 => ConflictException::class,
            $status === 410 => GoneException::class,
            $status === 413 => PayloadTooLargeException::class,
            $status === 422 => UnprocessableException::class,
            $status === 429 => RateLimitException::class,
            $status >= 500 => ServerException::class,
            default => self::class,
        };
        return new $class($status, $code, $message, $details, $requestId, $headers, $body);
    }
}
