# A scheduler of small tasks handing packets to each other through queues: objects,
# method calls, attribute access and branches (the shape of an OS-kernel simulation).


class Packet:
    __slots__ = ("dest", "kind", "data", "hops")

    def __init__(self, dest, kind):
        self.dest = dest
        self.kind = kind
        self.data = [0] * 4
        self.hops = 0


class Task:
    def __init__(self, ident, scheduler):
        self.ident = ident
        self.scheduler = scheduler
        self.inbox = []
        self.handled = 0

    def step(self):
        if not self.inbox:
            return False
        packet = self.inbox.pop()
        self.handled += 1
        packet.hops += 1
        for i in range(len(packet.data)):
            packet.data[i] = (packet.data[i] + self.ident * (i + 1)) % 251
        if packet.hops < 12:
            packet.dest = (packet.dest * 7 + packet.kind + self.ident) % len(self.scheduler.tasks)
            self.scheduler.send(packet)
        else:
            self.scheduler.done.append(packet)
        return True


class Scheduler:
    def __init__(self, count):
        self.tasks = []
        self.done = []
        for i in range(count):
            self.tasks.append(Task(i, self))

    def send(self, packet):
        self.tasks[packet.dest].inbox.append(packet)

    def run(self):
        busy = True
        while busy:
            busy = False
            for task in self.tasks:
                if task.step():
                    busy = True


def work():
    total = 0
    for round_ in range(12):
        scheduler = Scheduler(10)
        for i in range(2000):
            scheduler.send(Packet(i % 10, (i + round_) % 3))
        scheduler.run()
        total += sum(sum(p.data) for p in scheduler.done)
    return str(total)
