<?php
declare(strict_types=1);

namespace Mailbolt\Exception;

/** Status 410 (a cancelled message, a sunset version). */
class GoneException extends ApiException
{
}
