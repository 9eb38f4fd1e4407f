<?php
declare(strict_types=1);

namespace Mailbolt\Exception;

/** Status 400 (VALIDATION_ERROR, INVALID_INPUT, INVALID_TEMPLATE). */
class ValidationException extends ApiException
{
}
