<?php
declare(strict_types=1);

namespace Mailbolt\Exception;

/** Status 429 (RATE_LIMIT_EXCEEDED, QUOTA_EXCEEDED), after the retries. */
class RateLimitException extends ApiException
{
}
