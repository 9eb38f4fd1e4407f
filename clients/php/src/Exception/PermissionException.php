<?php
declare(strict_types=1);

namespace Mailbolt\Exception;

/** Status 403 (FORBIDDEN, INSUFFICIENT_SCOPES). */
class PermissionException extends ApiException
{
}
