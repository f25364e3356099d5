# Five bodies pulling on each other, stepped with a fixed time step: float arithmetic
# in nested loops over small lists.
import math


def make_bodies():
    solar_mass = 4 * math.pi * math.pi
    days = 365.24
    raw = [
        (0, 0, 0, 0, 0, 0, 1),
        (4.84, -1.16, -0.10, 0.00166, 0.00770, -0.0000690, 0.000954),
        (8.34, 4.12, -0.40, -0.00277, 0.00500, 0.0000230, 0.000286),
        (12.89, -15.11, -0.22, 0.00296, 0.00237, -0.0000296, 0.0000437),
        (15.38, -25.92, 0.18, 0.00268, 0.00163, -0.0000951, 0.0000515),
    ]
    return [[x, y, z, vx * days, vy * days, vz * days, m * solar_mass] for x, y, z, vx, vy, vz, m in raw]


def energy(bodies):
    e = 0.0
    for i, a in enumerate(bodies):
        e += 0.5 * a[6] * (a[3] ** 2 + a[4] ** 2 + a[5] ** 2)
        for b in bodies[i + 1:]:
            d = math.sqrt((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2 + (a[2] - b[2]) ** 2)
            e -= a[6] * b[6] / d
    return e


def advance(bodies, dt, steps):
    pairs = [(bodies[i], bodies[j]) for i in range(len(bodies)) for j in range(i + 1, len(bodies))]
    for _ in range(steps):
        for a, b in pairs:
            dx, dy, dz = a[0] - b[0], a[1] - b[1], a[2] - b[2]
            dist2 = dx * dx + dy * dy + dz * dz
            mag = dt / (dist2 * math.sqrt(dist2))
            am, bm = a[6] * mag, b[6] * mag
            a[3] -= dx * bm
            a[4] -= dy * bm
            a[5] -= dz * bm
            b[3] += dx * am
            b[4] += dy * am
            b[5] += dz * am
        for body in bodies:
            body[0] += dt * body[3]
            body[1] += dt * body[4]
            body[2] += dt * body[5]


def work():
    bodies = make_bodies()
    before = energy(bodies)
    advance(bodies, 0.01, 40000)
    return f"{before:.6f} {energy(bodies):.6f}"
