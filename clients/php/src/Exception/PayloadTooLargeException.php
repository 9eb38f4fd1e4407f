<?php
declare(strict_types=1);

namespace Mailbolt\Exception;

/** Status 413 (BODY_TOO_LARGE). */
class PayloadTooLargeException extends ApiException
{
}
