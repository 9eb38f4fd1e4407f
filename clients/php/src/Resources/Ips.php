<?php
declare(strict_types=1);

namespace Mailbolt\Resources;

use Mailbolt\Response;

/** Dedicated IPs and pools: answered whole, not paged. */
final class Ips extends Resource
{
    /** GET /v1/ips */
    public function list(): Response
    {
        return $this->call('GET', '/v1/ips');
    }

    /** GET /v1/ips/pools */
    public function listPools(): Response
    {
        return $this->call('GET', '/v1/ips/pools');
    }
}
