<?php
declare(strict_types=1);

namespace Mailbolt\Exception;

/** Status 404 (NOT_FOUND; also another tenant's resource). */
class NotFoundException extends ApiException
{
}
