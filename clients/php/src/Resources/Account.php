<?php
declare(strict_types=1);

namespace Mailbolt\Resources;

use Mailbolt\Response;

final class Account extends Resource
{
    /** GET /v1/account */
    public function get(): Response
    {
        return $this->call('GET', '/v1/account');
    }
}
