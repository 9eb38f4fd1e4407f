<?php
declare(strict_types=1);

namespace Mailbolt\Exception;

/** Status 5xx (INTERNAL_ERROR, SERVICE_UNAVAILABLE, GATEWAY_TIMEOUT), after the retries. */
class ServerException extends ApiException
{
}
