<?php
declare(strict_types=1);

namespace Mailbolt\Exception;

/** Status 401 (UNAUTHORIZED, INVALID_API_KEY, TOKEN_EXPIRED). */
class AuthenticationException extends ApiException
{
}
