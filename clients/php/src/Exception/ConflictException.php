<?php
declare(strict_types=1);

namespace Mailbolt\Exception;

/** Status 409 (CONFLICT, IDEMPOTENCY_CONFLICT). */
class ConflictException extends ApiException
{
}
