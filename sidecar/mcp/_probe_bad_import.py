from ..messages import MemoryService
